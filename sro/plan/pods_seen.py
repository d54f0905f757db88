"""The operand namespace's pods as a pass reads them, patched from pass to pass.

At a thousand nodes the operand namespace holds thousands of pods, and a pass sees a few
hundred of them change. Reading them again each pass walked every one several times
(the SpecialResource's own bare pods, their owned objects, the pods of its DaemonSets
and Jobs). This record is built once and then patched with only the pods the pod
cache's journal says changed (``sro.cache.store.Store.changed_since``); the engine keeps
it between passes and starts again from a full read when the journal cannot say.

The result never depends on which way it was made: ``patched`` of a record with the
changes since equals ``read`` of the pods now (``tests/unit/plan/test_pods_seen.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import cast

from sro.model import desired, views
from sro.model import specialresource as sr_model
from sro.plan import live_records, pods_index

Key = pods_index.Key
"""A pod's (namespace, name)."""

_OWNER_KINDS = ("DaemonSet", "Job")
_WORKLOAD_KINDS = ("ReplicaSet", "StatefulSet")
"""Controllers of the pods of cluster-wide workloads (a Deployment's ReplicaSets, a
StatefulSet): their readiness is judged by the workload's status, and by these pods where
the status counts a withdrawn ``Ready`` as lost (``readiness.cluster_object``)."""


@dataclass(frozen=True, kw_only=True)
class PodsSeen:
    """What a pass reads of one SpecialResource's operand namespace.

    ``pods``: every cached pod of the namespace. ``bare``: the SpecialResource's own
    per-node pods (its owner label and its uid as their controller, no controller of
    another kind) as owned objects. ``relevant``: those, and the pods of the owned
    DaemonSets and Jobs in ``owners`` (by uid: a recreated DaemonSet's old pods are not
    the new one's); ``Observed.pods``. ``workload``: the pods a ReplicaSet or StatefulSet
    controls (``_WORKLOAD_KINDS``); ``Observed.workload_pods``.
    """

    namespace: str
    sr_name: str
    sr_uid: str
    owners: frozenset[str]
    pods: Mapping[Key, views.PodView]
    bare: Mapping[desired.ObjectRef, live_records.LiveObject]
    relevant: Mapping[Key, views.PodView]
    workload: Mapping[Key, views.PodView]
    on_node: Mapping[str, Mapping[Key, views.PodView]]
    """``relevant`` by the node each pod runs on ("": not scheduled): a pass reads the pods
    of the few nodes whose walk it builds again (``Observed.pods_by_node``), not an index of
    every pod made anew."""

    def fits(self, sr: sr_model.SpecialResource) -> bool:
        """Whether this record reads ``sr``'s namespace for ``sr`` (``patched`` needs it to)."""
        return self.namespace == sr.spec.namespace and self.sr_name == sr.name and self.sr_uid == sr.uid


def owner_uids(objects: Iterable[live_records.LiveObject]) -> frozenset[str]:
    """The uids of the owned DaemonSets and Jobs, whose pods the planner reads."""
    return frozenset(live.uid for live in objects if live.ref.kind in _OWNER_KINDS)


def read(pods: Iterable[views.PodView], *, sr: sr_model.SpecialResource, owners: frozenset[str]) -> PodsSeen:
    """The record of ``pods`` (the namespace's cached pods), from nothing."""
    state = _Building(sr=sr, owners=owners, pods={}, bare={}, relevant={}, workload={}, on_node={})
    for pod in pods:
        if pod.namespace == sr.spec.namespace:
            state.put((pod.namespace, pod.name), pod)
    return state.done()


def patched(
    last: PodsSeen,
    *,
    sr: sr_model.SpecialResource,
    owners: frozenset[str],
    changed: Iterable[Key],
    find: Callable[[Key], views.PodView | None],
) -> PodsSeen:
    """``last`` with the pods of ``changed`` (keys, any namespace) read again through
    ``find`` (None: gone). Other ``owners`` than ``last``'s (a new DaemonSet's uid: pods
    already there become its own) sort ``last.pods`` again first. ``last`` must fit
    ``sr``: a record of another namespace knows nothing of the pods already in this one,
    and only a full ``read`` does."""
    if not last.fits(sr):
        raise ValueError(
            f"pods read for {last.namespace}/{last.sr_name}, not for {sr.spec.namespace}/{sr.name}"
        )
    on_node: dict[str, dict[Key, views.PodView]] | None = None
    if last.owners == owners:
        relevant = dict(last.relevant)
        # Each node's pods are the last record's until they change (``_Building.shared``).
        on_node = cast(dict[str, dict[Key, views.PodView]], dict(last.on_node))
    else:  # a bare pod has no DaemonSet or Job for controller: only the others are sorted again
        relevant = {
            k: p for k, p in last.pods.items() if p.owner_kind in _OWNER_KINDS and p.owner_uid in owners
        }
        relevant.update(
            ((ref.namespace, ref.name), last.pods[(ref.namespace, ref.name)]) for ref in last.bare
        )
    state = _Building(
        sr=sr,
        owners=owners,
        pods=dict(last.pods),
        bare=dict(last.bare),
        relevant=relevant,
        workload=dict(last.workload),
        on_node=on_node if on_node is not None else pods_index.by_node(relevant),
        shared=set(on_node or ()),
    )
    for key in sorted(k for k in changed if k[0] == sr.spec.namespace):
        state.put(key, find(key))
    return state.done()


@dataclass(kw_only=True)
class _Building:
    """A record being made: ``put`` files one pod (or its absence) in every part."""

    sr: sr_model.SpecialResource
    owners: frozenset[str]
    pods: dict[Key, views.PodView]
    bare: dict[desired.ObjectRef, live_records.LiveObject]
    relevant: dict[Key, views.PodView]
    workload: dict[Key, views.PodView]
    on_node: dict[str, dict[Key, views.PodView]]
    shared: set[str] = field(default_factory=set)
    """Nodes whose ``on_node`` entry is still the last record's: copied before it changes."""

    def _on(self, node: str) -> dict[Key, views.PodView]:
        if node in self.shared:
            self.shared.discard(node)
            self.on_node[node] = dict(self.on_node[node])
        return self.on_node.setdefault(node, {})

    def _unfile(self, key: Key) -> None:
        """Take ``key``'s pod out of ``relevant`` and of its node's pods."""
        old = self.relevant.pop(key, None)
        if old is not None:
            self._off(key, old.node)

    def _off(self, key: Key, node: str) -> None:
        here = self._on(node)
        here.pop(key, None)
        if not here:
            del self.on_node[node]

    def put(self, key: Key, pod: views.PodView | None) -> None:
        ref = desired.ObjectRef(api_version="v1", kind="Pod", namespace=key[0], name=key[1])
        if pod is None:
            self.pods.pop(key, None)
            self.bare.pop(ref, None)
            self._unfile(key)
            self.workload.pop(key, None)
            return
        if self.pods.get(key) is pod:
            return  # the cache's very record: everything filed of it holds
        self.pods[key] = pod
        if is_bare(pod, self.sr):
            live = live_records.LiveObject(ref=ref, uid=pod.uid, phase=pod.phase, deleting=pod.deleting)
            self.bare[ref] = live
        else:
            self.bare.pop(ref, None)
        if ref in self.bare or (pod.owner_kind in _OWNER_KINDS and pod.owner_uid in self.owners):
            old = self.relevant.get(key)
            if old is not None and old.node != pod.node:
                self._off(key, old.node)  # scheduled since: filed under its node now
            self.relevant[key] = pod
            self._on(pod.node)[key] = pod
        else:
            self._unfile(key)
        if pod.owner_kind in _WORKLOAD_KINDS:
            self.workload[key] = pod
        else:
            self.workload.pop(key, None)

    def done(self) -> PodsSeen:
        return PodsSeen(
            namespace=self.sr.spec.namespace,
            sr_name=self.sr.name,
            sr_uid=self.sr.uid,
            owners=self.owners,
            pods=self.pods,
            bare=self.bare,
            relevant=self.relevant,
            workload=self.workload,
            on_node=self.on_node,
        )


def is_bare(pod: views.PodView, sr: sr_model.SpecialResource) -> bool:
    """Whether ``pod`` is one of ``sr``'s own per-node pods: its owner label, no controller
    of another kind, and (``sr`` having a uid) ``sr`` itself as its controller."""
    return (
        pod.labels.get(sr_model.OWNER_LABEL) == sr.name
        and pod.owner_kind not in live_records.POD_CONTROLLERS
        and (not sr.uid or pod.owner_uid == sr.uid)
    )
