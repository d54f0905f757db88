"""What the engine read from its caches for one SpecialResource, as one immutable record.

The planner is pure: it never reads a cache or the clock itself. The engine gathers this
record each reconcile and hands it over with ``now``; everything the planner needs from the
cluster is here, already projected to the few fields the readiness rules read
(``live_records.LiveObject`` for owned objects, ``sro.model.views`` for Nodes and Pods).

Two pieces are bookkeeping the planner itself produced last time and the engine keeps in
memory between reconciles (losing them on a restart only restarts a backoff or a log fetch):

* ``retries``: per-node pods that failed, how often and when (for the recreate backoff);
* ``logs``: the last 4 KiB of each container log of pods the previous plan listed in
  ``logs_needed``, keyed by pod uid, so a pod whose logs matched is not fetched again;
* ``log_reads``: when a plan last listed each pod there, so a pod is read again only when
  its poll interval has passed (``sro.plan.log_polls``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from types import MappingProxyType
from typing import Any

from sro.model import bodies, desired, upgrade_policy, views
from sro.plan import live_records, log_polls, pods_index
from sro.plan import walk_memo as walk_memo_


@dataclass(frozen=True, kw_only=True)
class Retry:
    """Bookkeeping for a per-node pod that failed: which pod, when we saw it fail, how often,
    and why (the state stays Failed with that reason until a recreated pod succeeds)."""

    pod_uid: str
    failed_at: datetime
    attempts: int
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class ImageCheck:
    """What the registry said about one image of one kernel group, in one state.

    ``outcome`` is ``exists``, ``missing``, ``invalid`` (not a reference: a recipe
    problem, as missing as can be), ``unauthorized`` or ``unreachable``; ``digest`` is
    set for ``exists``, ``detail`` (the registry's words) for the others."""

    image: str
    state: str
    outcome: str
    digest: str = ""
    detail: str = ""

    @property
    def exists(self) -> bool:
        return self.outcome == "exists"

    @property
    def missing(self) -> bool:
        return self.outcome in ("missing", "invalid")


_NO_IMAGES: Mapping[str, tuple[ImageCheck, ...]] = MappingProxyType({})
_NO_DRAINS: Mapping[str, tuple[str, ...]] = MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class Preflight:
    """``spec.preflight``'s expected kernels as the engine rendered and checked them:
    their kernel groups, what the registry said of each group's images, and the build
    Jobs rendered for them (``sro.plan.preflight``); empty when none is expected."""

    groups: tuple[desired.KernelGroup, ...] = ()
    images: Mapping[str, tuple[ImageCheck, ...]] = field(default_factory=lambda: _NO_IMAGES)
    builds: tuple[desired.DesiredObject, ...] = ()
    build: bool = False
    """Whether the missing images are built ahead (``spec.preflight.build``)."""


NO_PREFLIGHT = Preflight()
_NO_OBJECTS: Mapping[desired.ObjectRef, live_records.LiveObject] = MappingProxyType({})
_NO_LOGS: Mapping[str, Mapping[str, str]] = MappingProxyType({})
_NO_READS: Mapping[str, datetime] = MappingProxyType({})
_NO_RETRIES: Mapping[desired.ObjectRef, Retry] = MappingProxyType({})
_NO_STATUS: Mapping[str, Any] = MappingProxyType({})


def _no_annotations() -> Mapping[str, str | None]:
    return MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class NodeAnswer:
    """What sro's last patch of a node returned: its resourceVersion, and the labels of
    this SpecialResource it carried (``<sr>.sro.dev/...``; the rest is not kept).

    ``annotations``: each node annotation sro keeps for this SpecialResource
    (``lifecycle.node_marks``), None where the node had none. ``unschedulable``:
    ``spec.unschedulable`` as sro's patches of the node last set it (None: they did not),
    which a patch's answer (its metadata alone) does not show."""

    version: int
    labels: Mapping[str, str]
    annotations: Mapping[str, str | None] = field(default_factory=_no_annotations)
    unschedulable: bool | None = None


@dataclass(frozen=True, kw_only=True)
class Observed:
    """Everything the planner reads about one SpecialResource's world.

    ``nodes``: the selected nodes (the names in ``DesiredState.nodes``), with current labels.
    ``departed``: nodes that carry this SpecialResource's labels, kernel annotation or taints
    but are no longer selected. ``objects``: every object the operator made for it that the
    cluster has, found by the ``sro.dev/owner`` label (never pods made by a controller).
    ``pods``: the owned per-node pods and the pods of owned DaemonSets.
    ``taints``: the SpecialResource's ``spec.taints`` (put on every selected node).
    ``generation``: the SpecialResource's ``metadata.generation``.
    """

    generation: int
    nodes: Mapping[str, views.NodeView]
    departed: tuple[views.NodeView, ...] = ()
    objects: Mapping[desired.ObjectRef, live_records.LiveObject] = field(default_factory=lambda: _NO_OBJECTS)
    pods: tuple[views.PodView, ...] = ()
    logs: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: _NO_LOGS)
    log_reads: Mapping[str, datetime] = field(default_factory=lambda: _NO_READS)
    """Pod uid -> when a plan of this process last asked for its tails (engine memory)."""
    log_rate: float = log_polls.FLEET_READS_PER_SECOND
    """Tails read again per second over the whole fleet (``sro run --log-reads-per-second``)."""
    retries: Mapping[desired.ObjectRef, Retry] = field(default_factory=lambda: _NO_RETRIES)
    previous_status: Mapping[str, Any] = field(default_factory=lambda: _NO_STATUS)
    taints: tuple[views.Taint, ...] = ()
    recipe_source: str = "built-in"  # built-in | directory | configmap
    lagging: frozenset[tuple[str, str]] = frozenset()
    """(apiVersion, kind) whose cache has not yet shown sro's own last write to that kind:
    irreversible steps that rest on them wait (``lifecycle.fresh_enough``)."""
    upgrade_policy: upgrade_policy.UpgradePolicy = upgrade_policy.DEFAULT
    """The SpecialResource's ``spec.upgradePolicy`` (``sro.plan.upgrade``)."""
    drains: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: _NO_DRAINS)
    """Node -> the pods the engine's last drain of it left (``"<ns>/<pod>: why"``), for
    nodes the previous plan drained: engine memory, like ``logs``."""
    jobs: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: _NO_DRAINS)
    """Node -> the pods ``waitForCompletion`` still waits for there (``"<ns>/<pod>"``), for
    nodes the previous plan asked about (``sro.plan.upgrade_jobs``): engine memory, like
    ``drains``."""
    images: Mapping[str, tuple[ImageCheck, ...]] = field(default_factory=lambda: _NO_IMAGES)
    """Kernel group key -> what the registry said of each of its operand images
    (``sro.plan.images`` decides what follows); empty when nothing was checked."""
    revisions: tuple[live_records.Revision, ...] = ()
    """The ControllerRevisions of the owned DaemonSets (their template history)."""

    @cached_property
    def _kinds(self) -> dict[str, tuple[tuple[desired.ObjectRef, live_records.LiveObject], ...]]:
        return {}

    def of_kind(self, kind: str) -> tuple[tuple[desired.ObjectRef, live_records.LiveObject], ...]:
        """The owned objects of ``kind`` with their refs, in ``objects`` order (several
        parts of a plan look for one kind among thousands of per-node pods: one scan each
        per pass serves them all)."""
        found = self._kinds.get(kind)
        if found is None:
            found = self._kinds[kind] = tuple((r, o) for r, o in self.objects.items() if r.kind == kind)
        return found

    @cached_property
    def current_revisions(self) -> Mapping[str, live_records.Revision]:
        """DaemonSet uid -> its current template revision (the highest number), where known."""
        out: dict[str, live_records.Revision] = {}
        for r in self.revisions:
            if r.owner_uid not in out or r.number > out[r.owner_uid].number:
                out[r.owner_uid] = r
        return out

    def current_revision(self, owner_uid: str) -> live_records.Revision | None:
        """The DaemonSet's current template revision, if its history is known."""
        return self.current_revisions.get(owner_uid)

    def revision_of(self, owner_uid: str, hash_: str) -> live_records.Revision | None:
        """The DaemonSet's revision whose pods carry ``controller-revision-hash: hash_``."""
        return next((r for r in self.revisions if r.owner_uid == owner_uid and r.hash == hash_), None)

    preflight: Preflight = NO_PREFLIGHT
    """``spec.preflight``'s kernels, checked (``sro.plan.preflight``)."""
    rechecked: frozenset[str] = frozenset()
    """Uids of build Jobs whose image the engine has looked up again since they completed
    (``sro.plan.builds``): engine memory, like ``logs``."""
    walk_memo: walk_memo_.Memo = walk_memo_.EMPTY
    """The last walk's memory (``sro.plan.walk_memo``): engine memory, like ``logs``; a
    node whose inputs did not change since is not walked again."""
    touched: walk_memo_.Touched | None = None
    """What the node and pod caches changed since ``walk_memo``'s pass (the engine's
    journal of its stores): the walk builds the key only of the nodes it concerns
    (``sro.plan.walk_touched``). None: not known; every node's key is built."""
    node_answers: Mapping[str, NodeAnswer] = field(default_factory=dict)
    """What sro's last patch of each node returned, this process (engine memory): a cached
    node older than that does not show sro's own last write yet."""
    finished: frozenset[desired.ObjectRef] = frozenset()
    """Owned bare pods the cache saw succeed and then go since the last pass, deleted by
    someone else (the pod garbage collector) and not made again (``inputs.finished_pods``):
    each proves its state ran, as the node's ready label would once this pass sets it."""

    def _newer(self, node: views.NodeView) -> NodeAnswer | None:
        """sro's last patch of ``node``, while the cached node is older than it."""
        written = self.node_answers.get(node.name)
        if written is None or bodies.version_number(node.resource_version) >= written.version:
            return None
        return written

    def own_labels(self, node: views.NodeView) -> Mapping[str, str]:
        """``node``'s labels as of sro's own last write to it at the least: as cached, or,
        while the cache is older than sro's last patch of it, as that patch returned them
        (sro's own labels only: ``NodeAnswer``)."""
        written = self._newer(node)
        return node.labels if written is None else written.labels

    def own_annotation(self, node: views.NodeView, key: str) -> str:
        """One of sro's node annotations (``lifecycle.node_marks``) as of sro's own
        last write to the node at the least ("" where it has none)."""
        written = self._newer(node)
        if written is None or key not in written.annotations:
            return node.annotations.get(key, "")
        return written.annotations[key] or ""

    def own_view(self, node: views.NodeView, *, sr_name: str) -> views.NodeView:
        """``node`` as of sro's own last write to it at the least: as cached, or, while the
        cache is older than sro's last patch of it, with what that patch returned of
        SpecialResource ``sr_name``'s labels and annotations, its resourceVersion, and
        ``spec.unschedulable`` as sro's patches set it. A driver upgrade moves a node one
        phase per pass from its label and record: a pass that read them from before its
        own last move would move the node again, from where it was."""
        written = self._newer(node)
        if written is None:
            return node
        prefix = sr_name + views.SR_LABEL_DOMAIN
        labels = {k: v for k, v in node.labels.items() if not k.startswith(prefix)}
        labels.update(written.labels)
        annotations = dict(node.annotations)
        for key, value in written.annotations.items():
            if value is None:
                annotations.pop(key, None)
            else:
                annotations[key] = value
        unschedulable = node.unschedulable if written.unschedulable is None else written.unschedulable
        return dataclasses.replace(
            node,
            labels=MappingProxyType(labels),
            annotations=MappingProxyType(annotations),
            unschedulable=unschedulable,
            resource_version=str(written.version),
        )

    pods_named: Mapping[tuple[str, str], views.PodView] | None = None
    """``pods`` by (namespace, name), when the reader keeps them so (``pods_seen``): then
    ``pods_by_name`` is not built again from every pod each pass."""

    @cached_property
    def pods_by_name(self) -> Mapping[tuple[str, str], views.PodView]:
        """Pods by (namespace, name): how per-node pods are found."""
        if self.pods_named is not None:
            return self.pods_named
        return {(p.namespace, p.name): p for p in self.pods}

    pods_on: Mapping[str, Mapping[tuple[str, str], views.PodView]] | None = None
    """``pods`` by node and (namespace, name), when the reader keeps them so (``pods_seen``):
    then ``pods_by_node`` reads only the nodes asked for."""

    @cached_property
    def pods_by_node(self) -> Mapping[str, tuple[views.PodView, ...]]:
        """Pods by the node they run on, each node's by (namespace, name) (``walk_memo``:
        what a node's walk reads)."""
        if self.pods_on is not None:
            return pods_index.ByNode(self.pods_on)
        index = pods_index.by_node(self.pods_by_name)
        return {node: pods_index.in_order(pods) for node, pods in index.items()}

    workload_pods: tuple[views.PodView, ...] = ()
    """The pods a ReplicaSet or StatefulSet controls (``pods_seen``): a cluster-wide
    workload's own pods, read only where its status falls short (``workload_pods_of``)."""

    def workload_pods_of(self, live: live_records.LiveObject) -> tuple[views.PodView, ...]:
        """The pods of Deployment or StatefulSet ``live``: for a Deployment, those of its
        ReplicaSets (named ``<deployment>-<pod-template-hash>`` by the Deployment controller),
        for a StatefulSet those it controls by uid."""
        ref = live.ref
        if ref.kind == "StatefulSet":
            return tuple(
                p
                for p in self.workload_pods
                if p.owner_kind == "StatefulSet" and p.owner_uid == live.uid and p.namespace == ref.namespace
            )
        if ref.kind == "Deployment":
            return tuple(
                p
                for p in self.workload_pods
                if p.owner_kind == "ReplicaSet"
                and p.namespace == ref.namespace
                and p.owner_name == f"{ref.name}-{p.labels.get(live_records.TEMPLATE_HASH, '')}"
            )
        return ()

    def daemonset_pods(self, ref: desired.ObjectRef, node: str) -> tuple[views.PodView, ...]:
        """The pods of DaemonSet ``ref`` on ``node`` (in its namespace), from the node's few
        pods: only nodes a walk judges again ask, so no index of every pod is built."""
        return tuple(
            p
            for p in self.pods_by_node.get(node, ())
            if p.owner_name == ref.name and p.owner_kind == "DaemonSet" and p.namespace == ref.namespace
        )

    def pod(self, ref: desired.ObjectRef) -> views.PodView | None:
        return self.pods_by_name.get((ref.namespace, ref.name))
