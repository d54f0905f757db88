"""Keeping DaemonSets off the nodes an earlier SpecialResource of the same recipe keeps.

When two SpecialResources of one recipe select overlapping nodes, the older one keeps the
overlap (``sro.plan.conflicts``) and the newer runs on none of it. Per-node pods are simply
not rendered there (the pipeline selects from the other nodes), but a DaemonSet places its
pods by labels, which say nothing of conflicts: it gets a required
``kubernetes.io/hostname NotIn [...]`` term in every node-selector term. (A
``metadata.name`` field selector would be exact, but the API server allows only one value
in it; the kubelet sets the hostname label to the node's name.) Runs after placement, so
it adds to the affinity placement wrote.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sro.hooks import base
from sro.model import desired

HOSTNAME_LABEL = "kubernetes.io/hostname"


def apply(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    if not ctx.keep_off:
        return list(objects)
    names = sorted(ctx.keep_off)
    out = []
    for obj in objects:
        template = (obj.body.get("spec") or {}).get("template") if obj.kind == "DaemonSet" else None
        if not isinstance(template, dict):
            out.append(obj)
            continue
        new, body = base.edit(obj)
        pod_spec = base.sub(base.sub(base.sub(body, "spec"), "template"), "spec")
        _add_term(pod_spec, names)
        out.append(new)
    return out


def _add_term(pod_spec: dict[str, Any], names: list[str]) -> None:
    keep_out = {"key": HOSTNAME_LABEL, "operator": "NotIn", "values": names}
    node_affinity = base.sub(base.sub(pod_spec, "affinity"), "nodeAffinity")
    required = base.sub(node_affinity, "requiredDuringSchedulingIgnoredDuringExecution")
    terms = [t for t in required.get("nodeSelectorTerms") or () if isinstance(t, dict)] or [{}]
    for term in terms:
        term["matchExpressions"] = [*(term.get("matchExpressions") or ()), keep_out]
    required["nodeSelectorTerms"] = terms
