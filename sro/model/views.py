"""Trimmed, immutable views of the cluster objects reconciles read.

Caches keep these instead of whole API bodies, so thousands of Nodes and Pods stay cheap,
and the pure planner reads them without knowing where they came from. Each ``from_body``
projection is the only place that knows the raw shape of the object.

At 5,000 nodes the caches hold 40,000 pods: the views have slots (no per-instance dict),
and the strings many of them repeat (label keys and values, owners, node names, phases)
are interned, so each is stored once however many views carry it. That takes a pod's
view from about 1.8 KB to 0.7 KB; unique strings (names, uids) are kept as they come.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, cast

from sro.model import bodies, shared_labels

NFD = "feature.node.kubernetes.io/"
KERNEL_LABEL = NFD + "kernel-version.full"
OS_ID_LABEL = NFD + "system-os_release.ID"
OS_VERSION_LABEL = NFD + "system-os_release.VERSION_ID"
OS_MAJOR_LABEL = NFD + "system-os_release.VERSION_ID.major"
OS_MINOR_LABEL = NFD + "system-os_release.VERSION_ID.minor"

_EMPTY: Mapping[str, str] = MappingProxyType({})


def _empty() -> Mapping[str, str]:
    # A shared read-only empty mapping; dataclasses on 3.11 refuse it as a plain default.
    return _EMPTY


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, str]:
    """``mapping`` read-only, every key and value ``_shared`` (written out here: a node's
    labels are read on every event of it, and a function call per string was most of it)."""
    if not mapping:
        return _EMPTY
    intern = sys.intern
    return MappingProxyType({intern(str(k)): intern(str(v)) for k, v in mapping.items()})


def _shared(value: Any) -> str:
    """``value`` as a string stored once however many views repeat it."""
    return sys.intern(str(value))


KEPT = 4096
"""Distinct pod label sets and container states held once each (the most recently used):
a DaemonSet's pods repeat a few dozen of them, and a flood of distinct ones (a tenant's,
a hostile pod's) costs at most this many entries."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Taint:
    """A node taint. ``time_added`` (the API server sets it on ``NoExecute`` taints) is kept
    so rewriting a node's taint list gives other writers' taints back exactly as they
    were; it takes no part in comparing taints."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"
    time_added: str = field(default="", compare=False)

    def to_body(self) -> dict[str, str]:
        body = {"key": self.key, "effect": self.effect}
        if self.value:
            body["value"] = self.value
        if self.time_added:
            body["timeAdded"] = self.time_added
        return body


READINESS_TAINTS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
"""The taints the node lifecycle controller puts on a node that is NotReady or stopped
reporting, and takes off when it reports Ready again."""


SR_LABEL_DOMAIN = ".sro.dev/"
"""What the key of every node label a SpecialResource sets holds: ``<name>.sro.dev/<state>``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeView:
    """What reconciles need of a Node; heartbeats change none of it."""

    name: str
    labels: Mapping[str, str] = field(default_factory=_empty)
    annotations: Mapping[str, str] = field(default_factory=_empty)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = False
    kernel_version: str = ""  # status.nodeInfo.kernelVersion
    os_image: str = ""  # status.nodeInfo.osImage
    architecture: str = ""  # status.nodeInfo.architecture
    resource_version: str = ""
    marked: tuple[str, ...] = field(init=False, compare=False, repr=False)
    """The keys of ``labels`` a SpecialResource may have set (``SR_LABEL_DOMAIN``), found
    once per view: a real node has about a hundred labels and a handful of sro's, and
    which of them are one SpecialResource's is asked on every node event that changes
    something and for every changed node in every pass."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "marked", tuple([k for k in self.labels if SR_LABEL_DOMAIN in k]))

    def labels_of(self, prefix: str) -> list[str]:
        """The keys of ``labels`` that start with ``prefix``; a SpecialResource's prefix
        (``<name>.sro.dev/``) is looked up among ``marked`` alone."""
        keys = self.marked if prefix.endswith(SR_LABEL_DOMAIN) else self.labels
        return [k for k in keys if k.startswith(prefix)]

    @property
    def kernel(self) -> str:
        """The full kernel version, from NFD first, then from nodeInfo."""
        return self.labels.get(KERNEL_LABEL) or self.kernel_version

    def relevant(self) -> tuple[object, ...]:
        """What every reconcile reads; equal tuples mean the change needs no reconcile.

        The kernel enters as ``kernel``, not as ``nodeInfo``'s version: that is read only
        while NFD has not labelled the node, so a kubelet reporting its new kernel ahead of
        NFD's relabel wakes no pass (the relabel does, an instant later).

        Readiness does not enter: ``Ready`` and the node controller's taints that follow it
        (``READINESS_TAINTS``). Only a driver upgrade reads them (a NotReady node is skipped
        and counts as unavailable), and it looks again on its own while it waits on a
        NotReady node (``sro.plan.upgrade``). At thousands of nodes heartbeats fall behind
        and the node controller flips nodes NotReady and back all the time; each flip woke
        a full pass while the fleet stood still.

        Nor do extended resources (``status.allocatable``): nothing sro decides reads them,
        and a device plugin's pod whose Ready the node controller withdrew may take them
        off the node and put them back, every node of a blink a pass for nothing."""
        # The mappings themselves: they compare as mappings, with no sort (every Node event
        # of every heartbeat asks this of two views).
        taints = self.taints
        if any(t.key in READINESS_TAINTS for t in taints):
            taints = tuple(t for t in taints if t.key not in READINESS_TAINTS)
        return (
            self.labels,
            taints,
            self.unschedulable,
            self.kernel,
            self.os_image,
            self.architecture,
            self.annotations,
        )

    @classmethod
    def from_body(cls, raw: Mapping[str, Any], *, previous: NodeView | None = None) -> NodeView:
        """The view of a raw Node (read as ``bodies.NodeBody``; untrusted, so every field
        is checked as it is taken).

        ``previous``, the view of an earlier version of the same node: its labels are taken
        again when the body's are equal to them. A node's labels are read on every event of
        it, and nearly every event (a heartbeat, a status refresh) leaves them as they were:
        comparing a real node's hundred labels costs a fraction of interning them again."""
        body = cast(bodies.NodeBody, raw)
        meta = body.get("metadata") or {}
        raw_labels = meta.get("labels")
        if previous is not None and previous.labels == (raw_labels or _EMPTY):
            labels = previous.labels  # equal strings, already interned
        else:
            labels = shared_labels.shared(raw_labels) if raw_labels else _EMPTY
        spec = body.get("spec") or {}
        status = body.get("status") or {}
        info = status.get("nodeInfo") or {}
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()
        )
        return cls(
            name=str(meta.get("name", "")),
            labels=labels,
            annotations=_frozen(
                {k: v for k, v in (meta.get("annotations") or {}).items() if k.startswith("sro.dev/")}
            ),
            taints=tuple(
                Taint(
                    key=t.get("key", ""),
                    value=t.get("value", "") or "",
                    effect=t.get("effect", ""),
                    time_added=str(t.get("timeAdded") or ""),
                )
                for t in spec.get("taints") or ()
            ),
            unschedulable=bool(spec.get("unschedulable", False)),
            ready=ready,
            kernel_version=_shared(info.get("kernelVersion", "")),
            os_image=_shared(info.get("osImage", "")),
            architecture=_shared(info.get("architecture", "")),
            resource_version=str(meta.get("resourceVersion", "")),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class ContainerState:
    """One container's status, reduced to what readiness and failure messages need."""

    name: str
    ready: bool = False
    waiting_reason: str = ""  # e.g. ImagePullBackOff
    terminated_reason: str = ""
    exit_code: int | None = None
    message: str = ""


@functools.lru_cache(maxsize=KEPT)
def _one_labels(items: tuple[tuple[Any, Any], ...]) -> Mapping[str, str]:
    return _frozen(dict(items))


@functools.lru_cache(maxsize=KEPT)
def _one_containers(states: tuple[ContainerState, ...]) -> tuple[ContainerState, ...]:
    return states  # the first of equal tuples, handed to every pod after it


def _containers(states: list[ContainerState]) -> tuple[ContainerState, ...]:
    """A pod's container states, the tuple shared by every pod whose states are equal."""
    made = tuple(states)
    try:
        return _one_containers(made)
    except TypeError:  # an exit code that is not a number: kept apart
        return made


def _pod_labels(raw: Any) -> Mapping[str, str]:
    """A pod's labels, the mapping shared by every pod with the same ones (the pods of one
    DaemonSet and template generation: at 5,000 nodes, 37,500 pods carry a few dozen sets)."""
    if not raw or not isinstance(raw, Mapping):
        return _frozen(raw)
    try:
        return _one_labels(tuple(raw.items()))
    except TypeError:  # an unhashable value: not a label any API server accepts, kept apart
        return _frozen(raw)


@dataclass(frozen=True, kw_only=True, slots=True)
class PodView:
    """What reconciles need of a Pod the operator owns."""

    namespace: str
    name: str
    uid: str = ""
    node: str = ""
    phase: str = "Pending"
    ready: bool = False
    labels: Mapping[str, str] = field(default_factory=_empty)
    owner_kind: str = ""
    owner_name: str = ""
    owner_uid: str = ""
    created: str = ""  # metadata.creationTimestamp, RFC 3339
    deleting: bool = False
    containers: tuple[ContainerState, ...] = ()
    resource_version: str = ""
    ready_withdrawn: bool = False
    """Running, not Ready, while the kubelet's own ``ContainersReady`` stays True and no
    readiness gate holds it back: the node lifecycle controller's mark on every pod of a
    node whose kubelet stopped reporting (it sets ``Ready`` alone). Nothing is known to
    have changed in the pod; the kubelet puts ``Ready`` back when it reports again."""

    def judged(self) -> tuple[object, ...]:
        """What of the pod the planner judges: every field but the resource version, with a
        withdrawn ``Ready`` counted as ``Ready`` (``sro.plan.readiness`` reads ``ready or
        ready_withdrawn`` alone). Two views equal this way wake no pass: at thousands of
        nodes a heartbeat gap takes Ready from every pod of a node and gives it back. (A
        tuple, not a copy of the view: the pod watch asks it twice of every event.)"""
        return (*_POD_JUDGED(self), self.ready or self.ready_withdrawn)

    @property
    def template_generation(self) -> str:
        """The DaemonSet template generation this pod was made from ("" if none)."""
        return self.labels.get("pod-template-generation", "")

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> PodView:
        meta = body.get("metadata") or {}
        spec = body.get("spec") or {}
        status = body.get("status") or {}
        owner: Mapping[str, Any] = next(
            (o for o in meta.get("ownerReferences") or () if o.get("controller")),
            (meta.get("ownerReferences") or [{}])[0],
        )
        conditions = {
            c.get("type"): c.get("status") for c in status.get("conditions") or () if isinstance(c, Mapping)
        }
        containers = []
        statuses = [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]
        for cs in statuses:
            state = cs.get("state") or {}
            waiting = state.get("waiting") or {}
            terminated = state.get("terminated") or (cs.get("lastState") or {}).get("terminated") or {}
            containers.append(
                ContainerState(
                    name=_shared(cs.get("name", "")),
                    ready=bool(cs.get("ready", False)),
                    waiting_reason=_shared(waiting.get("reason", "")),
                    terminated_reason=_shared(terminated.get("reason", "")),
                    exit_code=terminated.get("exitCode"),
                    message=str(waiting.get("message") or terminated.get("message") or ""),
                )
            )
        return cls(
            namespace=_shared(meta.get("namespace", "")),
            name=str(meta.get("name", "")),
            uid=str(meta.get("uid", "")),
            node=_shared(spec.get("nodeName", "")),
            phase=_shared(status.get("phase", "Pending")),
            ready=conditions.get("Ready") == "True",
            labels=_pod_labels(meta.get("labels")),
            owner_kind=_shared(owner.get("kind", "")),
            owner_name=_shared(owner.get("name", "")),
            owner_uid=_shared(owner.get("uid", "")),
            created=_shared(meta.get("creationTimestamp", "")),
            deleting=bool(meta.get("deletionTimestamp")),
            containers=_containers(containers),
            resource_version=str(meta.get("resourceVersion", "")),
            ready_withdrawn=(
                status.get("phase") == "Running"
                and conditions.get("Ready") == "False"
                and conditions.get("ContainersReady") == "True"
                and not spec.get("readinessGates")
            ),
        )


_POD_JUDGED = operator.attrgetter(
    *(
        f.name
        for f in dataclasses.fields(PodView)
        if f.name not in ("ready", "ready_withdrawn", "resource_version")
    )
)
"""The fields of a ``PodView`` that ``PodView.judged`` compares as they are."""
