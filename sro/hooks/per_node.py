"""``sro.dev/per-node``: one Pod per selected node, pinned to it.

Validation pods run once on each node, and that node's state completes when its pod
succeeds. Pods are pinned with ``nodeName``: it needs no label a node may lack, and the
planner creates a node's pod only when the node is due. Names get the node's name,
with a hash when it had to be cut or changed, so they stay unique and at most 63 long.

The pods of one template differ only in what is stamped here (name, node label,
``nodeName``), and no later hook reads those. So only the first node's pod goes through
the later hooks; ``expand`` stamps every other node's from it once they have run. At a
thousand nodes that is one pod per template through ten hooks instead of a thousand,
which is most of a render (a kernel change or a node joining renders again). The pods
are those the hooks would have made one by one, down to the order of their keys. A render
handed the last one takes from it the pods of every template whose first pod is unchanged:
after a kernel change only the pods that moved are new, the others the same instances.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

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
        nodes = [n.name for n in (ctx.members(obj.kernel_group) if obj.kernel_group else ctx.nodes)]
        if not nodes:
            continue
        # Only what differs is copied (name, node label, nodeName).
        first, body = base.edit_at(obj, ("metadata", "labels"), ("spec",), node=nodes[0])
        meta = base.metadata(body)
        template = str(meta["name"])
        labels = base.sub(meta, "labels")  # never sro.dev/node already: policy refuses sro.dev/ labels
        rest = Copies(name=template, labels=len(labels), nodes=nodes[1:])
        meta["name"] = node_name(template, nodes[0])
        if _labelled(nodes[0]):
            labels[NODE_LABEL] = nodes[0]
        base.sub(body, "spec")["nodeName"] = nodes[0]
        if rest.nodes:
            ctx.copies[_key(first)] = rest
        out.append(first)
    return out


@dataclass(frozen=True, kw_only=True)
class Copies:
    """What stamping a template's other pods needs: its name, how many labels it had (the
    stamp's label goes right after them), and the other nodes, in order."""

    name: str
    labels: int
    nodes: Sequence[str]


def expand(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    """``objects`` with, after each first per-node pod, its template's pods on the other
    nodes: the first pod as the hooks left it, stamped for each.

    Where the last render (``ctx.last``) made the very same first pod, down to the order
    of its keys, it stamped the same pods from it: those are taken again, the same
    instances (a kernel change renders every node's pods, and most did not change)."""
    if not ctx.copies:
        return list(objects)
    before: dict[tuple[object, ...], desired.DesiredObject] | None = None
    out: list[desired.DesiredObject] = []
    for obj in objects:
        out.append(obj)
        rest = ctx.copies.get(_key(obj)) if obj.node is not None else None
        if rest is None:
            continue
        if before is None:
            before = {_slot(o): o for o in ctx.last if o.node is not None}
        last = before.get(_slot(obj))
        if last is None or not _same(last, obj):
            out.extend(_stamped(obj, node, rest) for node in rest.nodes)
            continue
        # The same first pod on the same node has the same template name (a pod's name is
        # ``node_name(template, node)``), so the last render stamped each node's alike.
        for node in rest.nodes:
            kept = before.get((obj.source, obj.kernel_group, node))
            out.append(kept if kept is not None else _stamped(obj, node, rest))
    return out


def _slot(obj: desired.DesiredObject) -> tuple[object, ...]:
    """Where a per-node pod comes from: its document, kernel group and node."""
    return (obj.source, obj.kernel_group, obj.node)


def _same(a: desired.DesiredObject, b: desired.DesiredObject) -> bool:
    """Equal, and with the keys of their bodies in the same order (what ``sro render`` prints)."""
    return a is b or (a == b and repr(a.body) == repr(b.body))


def _key(first: desired.DesiredObject) -> base.CopiesKey:
    """A first pod's identity through the hooks (which never rename it)."""
    return (first.source, first.kernel_group, first.node or "", str(first.body["metadata"]["name"]))


def _labelled(node: str) -> bool:
    return names.label_value_problem(node) is None


def _stamped(first: desired.DesiredObject, node: str, rest: Copies) -> desired.DesiredObject:
    """``first`` as ``apply`` would have stamped it for ``node`` before the hooks ran: the
    node label right after the template's own labels (later hooks add theirs behind it),
    or none where the node's name is no valid label value."""
    body = dict(first.body)
    meta = body["metadata"] = dict(body["metadata"])
    meta["name"] = node_name(rest.name, node)
    items = [(k, v) for k, v in meta["labels"].items() if k != NODE_LABEL]
    if _labelled(node):
        items.insert(rest.labels, (NODE_LABEL, node))
    meta["labels"] = dict(items)
    body["spec"] = {**body["spec"], "nodeName": node}
    return dataclasses.replace(first, body=body, node=node)
