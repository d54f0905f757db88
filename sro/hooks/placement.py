"""The operator places every workload (contract §5); recipe authors write none of this.

Into every DaemonSet and per-node Pod it injects: the effective nodeSelector (the
SpecialResource's, else the recipe's), tolerations for the SpecialResource's own taints,
and one required node-affinity expression per state it comes after
(``<sr>.sro.dev/<state> In [ready]``; the direct ``after`` states suffice, since each of
those already waited for its own) and per dependency (``<dep>.sro.dev/complete In
[true]``). That is how a new node walks the states in order with no other coordination.
The kernel group's selector was added by the kernel-affine hook already.

Per-node Pods also get what the DaemonSet controller gives its pods: tolerations of the
node controller's ``not-ready`` and ``unreachable`` NoExecute taints, with no time limit.
A per-node Pod belongs to its node as a DaemonSet's pod does. Without them the API server
gives it five minutes on a node whose heartbeats lag, after which it is evicted, made
again by sro on the same node, and evicted again while the lag lasts; and a kubelet that
reports NotReady refuses to start it at all. A template's own toleration of either taint
(one with ``tolerationSeconds``, say) is kept as written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sro.hooks import base, podspec
from sro.model import desired
from sro.model import specialresource as srmodel

READY = "ready"
COMPLETE = "true"
NODE_CONDITION_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
"""The NoExecute taints the node controller sets on a node it has no word from."""


def placed(obj: desired.DesiredObject) -> bool:
    """Whether the operator places ``obj``: DaemonSets and per-node Pods."""
    return obj.kind == "DaemonSet" or (obj.kind == "Pod" and obj.node is not None)


def apply(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    out: list[desired.DesiredObject] = []
    for obj in objects:
        if not placed(obj):
            out.append(obj)
            continue
        # Only the pod spec's selector, tolerations and required node affinity change.
        where = (*(podspec.template_path(obj.kind) or ()), "spec")
        affinity = (*where, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
        new, body = base.edit_at(obj, (*where, "nodeSelector"), affinity)
        spec = podspec.pod_spec(body)
        assert spec is not None
        selector = base.sub(spec, "nodeSelector")
        for key, value in ctx.node_selector.items():
            selector[key] = value  # the operator decides placement, not the template
        _tolerate(spec, [t.toleration() for t in ctx.sr.spec.taints])
        if obj.kind == "Pod":
            _tolerate(spec, _daemon_tolerations(spec))
        expressions = [
            {"key": srmodel.state_label(ctx.sr.name, s), "operator": "In", "values": [READY]}
            for s in ctx.after(obj.state)
        ] + [
            {"key": srmodel.complete_label(dep), "operator": "In", "values": [COMPLETE]}
            for dep in ctx.sr.spec.dependencies
        ]
        if expressions:
            _require(spec, expressions)
        out.append(new)
    return out


def _tolerate(spec: dict[str, Any], tolerations: list[dict[str, str]]) -> None:
    if not tolerations:
        return
    existing = spec.get("tolerations")
    current = list(existing) if isinstance(existing, list) else []
    current.extend(t for t in tolerations if t not in current)
    spec["tolerations"] = current


def _daemon_tolerations(spec: dict[str, Any]) -> list[dict[str, str]]:
    """The node-condition tolerations a DaemonSet's pod gets, but for any taint the pod
    tolerates already (a toleration with no key tolerates every taint)."""
    existing = spec.get("tolerations")
    written = [t for t in existing if isinstance(t, dict)] if isinstance(existing, list) else []

    def covered(key: str) -> bool:
        return any(
            (t.get("key") == key or (not t.get("key") and t.get("operator") == "Exists"))
            and t.get("effect", "") in ("", "NoExecute")
            for t in written
        )

    return [
        {"key": key, "operator": "Exists", "effect": "NoExecute"}
        for key in NODE_CONDITION_TAINTS
        if not covered(key)
    ]


def _require(spec: dict[str, Any], expressions: list[dict[str, Any]]) -> None:
    """Add ``expressions`` to every required node-selector term (terms are ORed)."""
    affinity = base.sub(base.sub(spec, "affinity"), "nodeAffinity")
    required = base.sub(affinity, "requiredDuringSchedulingIgnoredDuringExecution")
    terms = required.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        terms = [{}]
    required["nodeSelectorTerms"] = [
        _with(term, expressions) if isinstance(term, dict) else term for term in terms
    ]


def _with(term: dict[str, Any], expressions: list[dict[str, Any]]) -> dict[str, Any]:
    """A copy of ``term`` that also requires ``expressions`` (the term itself may be shared)."""
    current = list(term.get("matchExpressions") or [])
    current.extend(e for e in expressions if e not in current)
    return {**term, "matchExpressions": current}
