"""Owned objects as the cluster has them, reduced to what the readiness rules read.

``LiveObject`` is one of sro's objects as its cache holds it; ``Revision`` one of the
ControllerRevisions the DaemonSet controller keeps for sro's DaemonSets (what a failed
driver upgrade rolls back to). The engine builds them from its caches' views each time it
gathers an ``Observed`` (``sro.plan.inputs``), so they hold only the fields plans read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sro.model import desired

# The annotation the API server keeps on apps/v1 DaemonSets: the generation of the pod
# template. DaemonSet pods carry it as their ``pod-template-generation`` label. It equals
# ``metadata.generation`` unless a non-template spec field (update strategy, say) changed.
DS_TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"

# The label the DaemonSet controller puts on each pod: the hash of its template, and the
# suffix of the name of the ControllerRevision that keeps that template.
REVISION_HASH = "controller-revision-hash"

# The label the Deployment controller puts on a ReplicaSet's pods, and in its name.
TEMPLATE_HASH = "pod-template-hash"

# Kinds whose pods are made by a controller: such pods are never owned objects themselves.
POD_CONTROLLERS = frozenset({"DaemonSet", "ReplicaSet", "StatefulSet", "Job"})


@dataclass(frozen=True, kw_only=True)
class ObjectCondition:
    """One entry of an object's ``status.conditions``."""

    status: str  # "True" | "False" | "Unknown"
    reason: str = ""
    message: str = ""
    since: str = ""  # lastTransitionTime, RFC 3339


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _update_strategy(body: Mapping[str, Any]) -> str:
    if body.get("kind") != "DaemonSet":
        return ""
    spec = body.get("spec")
    strategy = spec.get("updateStrategy") if isinstance(spec, Mapping) else None
    kind = strategy.get("type") if isinstance(strategy, Mapping) else None
    return str(kind) if kind else "RollingUpdate"


@dataclass(frozen=True, kw_only=True)
class LiveObject:
    """An owned object as the cluster has it, reduced to what readiness rules read.

    ``replicas`` is ``spec.replicas`` (1 when unset, as the API server defaults it);
    ``template_generation`` is only meaningful for DaemonSets.
    """

    ref: desired.ObjectRef
    uid: str = ""
    generation: int = 0
    observed_generation: int = 0
    template_generation: int = 0
    replicas: int = 1
    available_replicas: int = 0
    ready_replicas: int = 0
    conditions: Mapping[str, ObjectCondition] = field(default_factory=lambda: MappingProxyType({}))
    phase: str = ""  # Namespace status.phase
    deleting: bool = False
    deleted_at: str = ""  # metadata.deletionTimestamp, RFC 3339, while ``deleting``
    update_strategy: str = ""  # DaemonSet spec.updateStrategy.type ("RollingUpdate" when unset)
    min_ready_seconds: int = 0  # spec.minReadySeconds (Deployment, StatefulSet, DaemonSet)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> LiveObject:
        meta = body.get("metadata") or {}
        spec = body.get("spec") or {}
        status = body.get("status") or {}
        generation = _int(meta.get("generation"))
        annotations = meta.get("annotations") or {}
        replicas = spec.get("replicas")
        return cls(
            ref=desired.ObjectRef.of(body),
            uid=str(meta.get("uid", "")),
            generation=generation,
            observed_generation=_int(status.get("observedGeneration")),
            template_generation=_int(annotations.get(DS_TEMPLATE_GENERATION), generation),
            replicas=1 if replicas is None else _int(replicas, 1),
            available_replicas=_int(status.get("availableReplicas")),
            ready_replicas=_int(status.get("readyReplicas")),
            conditions=MappingProxyType(
                {
                    str(c.get("type", "")): ObjectCondition(
                        status=str(c.get("status", "")),
                        reason=str(c.get("reason", "") or ""),
                        message=str(c.get("message", "") or ""),
                        since=str(c.get("lastTransitionTime", "") or ""),
                    )
                    for c in status.get("conditions") or ()
                }
            ),
            phase=str(status.get("phase", "") or ""),
            deleting=bool(meta.get("deletionTimestamp")),
            deleted_at=str(meta.get("deletionTimestamp") or ""),
            update_strategy=_update_strategy(body),
            min_ready_seconds=_int(spec.get("minReadySeconds")),
        )


@dataclass(frozen=True, kw_only=True)
class Revision:
    """A ControllerRevision the DaemonSet controller keeps for one of sro's DaemonSets: a
    pod template it had (``hash`` is its pods' ``controller-revision-hash``; the highest
    ``number`` is the current one). That history is what a failed driver upgrade is rolled
    back to (``sro.plan.upgrade_rollback``); sro never writes it."""

    name: str
    owner_uid: str
    hash: str
    number: int
    template: Mapping[str, Any]

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Revision | None:
        """The revision in ``body``, or None when it is not a DaemonSet's template."""
        meta = body.get("metadata") or {}
        owner = next((o for o in meta.get("ownerReferences") or () if o.get("controller")), None)
        data = body.get("data")
        spec = data.get("spec") if isinstance(data, Mapping) else None
        template = spec.get("template") if isinstance(spec, Mapping) else None
        if owner is None or owner.get("kind") != "DaemonSet" or not isinstance(template, Mapping):
            return None
        return cls(
            name=str(meta.get("name", "")),
            owner_uid=str(owner.get("uid", "")),
            hash=str((meta.get("labels") or {}).get(REVISION_HASH, "")),
            number=_int(body.get("revision")),
            # The controller stores the template as a strategic-merge patch that replaces it.
            template=MappingProxyType({k: v for k, v in template.items() if k != "$patch"}),
        )
