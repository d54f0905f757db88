"""``sro.dev/per-node``: one Pod per selected node, pinned to it.

Validation pods run once on each node, and that node's state completes when its pod
succeeds. Pods are pinned with ``nodeName``: it needs no label a node may lack, and the
planner creates a node's pod only when the node is due. Names get the node's name,
with a hash when it had to be cut or changed, so they stay unique and at most 63 long.
"""

from __future__ import annotations

from collections.abc import Sequence

from sro import errors
from sro.hooks import base, keys
from sro.model import desired, names

ANNOTATION = "per-node"
NODE_LABEL = "sro.dev/node"


def node_name(name: str, node: str) -> str:
    """``<name>-<node>`` when that is a valid DNS label, else a bounded form with a hash."""
    plain = f"{name}-{node}"
    if names.is_dns_label(plain):
        return plain
    return names.suffixed(name, node, identity=node)


def apply(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    out: list[desired.DesiredObject] = []
    for obj in objects:
        if not keys.flag(obj, ANNOTATION):
            out.append(obj)
            continue
        if obj.kind != "Pod":
            ctx.problems.add(
                errors.RecipeInvalid(
                    f"{obj.ref}: sro.dev/per-node applies to Pods only", location=ctx.locate(obj, "per-node")
                )
            )
            continue
        nodes = ctx.members(obj.kernel_group) if obj.kernel_group else list(ctx.nodes)
        for node in nodes:
            # One pod per node: only what differs is copied (name, node label, nodeName).
            new, body = base.edit_at(obj, ("metadata", "labels"), ("spec",), node=node.name)
            meta = base.metadata(body)
            meta["name"] = node_name(str(meta["name"]), node.name)
            labels = base.sub(meta, "labels")
            if names.label_value_problem(node.name) is None:
                labels[NODE_LABEL] = node.name
            base.sub(body, "spec")["nodeName"] = node.name
            out.append(new)
    return out
