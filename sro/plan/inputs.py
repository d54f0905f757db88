"""Gathering one reconcile's inputs from the caches: selection, peers, observed state.

Pure functions over what the caches hand out (``NodeView``, ``PodView``, ``ObjectView``
and raw SpecialResource bodies), so the engine's I/O shell stays thin and these rules can
be read in one place:

* a node is *selected* by the one rule of ``sro.model.selection`` (every label of the
  SpecialResource's ``nodeSelector``, or its recipe's default), minus the nodes an earlier
  SpecialResource of the same recipe keeps (``conflicts``);
* a node has *departed* when it is not selected but still carries something of this
  SpecialResource: a ``<sr>.sro.dev/`` label, its kernel annotation or its taint record;
* the observed objects are the cached objects labelled ``sro.dev/owner: <sr>`` (minus
  controller-made pods), and the pods are the owned pods plus the pods in the operand
  namespace that belong to an owned DaemonSet or Job (``sro.plan.pods_seen`` reads them,
  and patches what it read from pass to pass).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any

from sro.cache import projections
from sro.model import desired, selection, views
from sro.model import specialresource as sr_model
from sro.plan import conflicts, dependencies, finish, lifecycle, live_records, log_polls, pods_seen
from sro.plan import observed as observed_
from sro.plan import walk_memo as walk_memo_


@dataclass(frozen=True, kw_only=True)
class PeerSummary:
    """A SpecialResource as others see it: for dependency and conflict checks."""

    name: str
    recipe: str
    created: str
    dependencies: tuple[str, ...]
    nodes: frozenset[str]
    managed: bool


def summarise(
    sr: sr_model.SpecialResource, *, recipe_selector: Mapping[str, str], nodes: Iterable[views.NodeView]
) -> PeerSummary:
    return PeerSummary(
        name=sr.name,
        recipe=sr.spec.recipe,
        created=sr.creation_timestamp,
        dependencies=sr.spec.dependencies,
        nodes=selection.selected_names(
            nodes, selection.effective_selector(sr, recipe_default=recipe_selector)
        ),
        managed=sr.spec.management_state is sr_model.ManagementState.MANAGED and not sr.deleting,
    )


def dependency_report(name: str, peers: Iterable[PeerSummary]) -> dependencies.DependencyReport:
    table = {
        p.name: dependencies.Peer(name=p.name, dependencies=p.dependencies, nodes=p.nodes) for p in peers
    }
    return dependencies.check(name, table)


def conflict_report(name: str, peers: Iterable[PeerSummary]) -> conflicts.ConflictReport:
    """Conflicts among SpecialResources that actually run (Unmanaged/Removed/deleting ones claim nothing)."""
    claims = [
        conflicts.Claim(name=p.name, recipe=p.recipe, created=p.created, nodes=p.nodes)
        for p in peers
        if p.managed or p.name == name
    ]
    return conflicts.check(name, claims)


def departed(
    sr_name: str, nodes: Iterable[views.NodeView], *, selected: frozenset[str]
) -> tuple[views.NodeView, ...]:
    """Nodes outside the selection that still carry this SpecialResource's marks."""
    prefix, marks = lifecycle.label_prefix(sr_name), lifecycle.node_marks(sr_name)
    return tuple(
        n
        for n in nodes
        if n.name not in selected and (bool(n.labels_of(prefix)) or any(m in n.annotations for m in marks))
    )


def carrying(
    sr_name: str, nodes: Iterable[views.NodeView], taints: tuple[views.Taint, ...]
) -> tuple[views.NodeView, ...]:
    """Every node carrying a label, annotation or taint of this SpecialResource (for teardown)."""
    prefix, marks = lifecycle.label_prefix(sr_name), lifecycle.node_marks(sr_name)
    mine = {(t.key, t.effect) for t in taints}
    return tuple(
        n
        for n in nodes
        if n.labels_of(prefix)
        or any(m in n.annotations for m in marks)
        or any((t.key, t.effect) in mine for t in n.taints)
    )


def sr_taints(sr: sr_model.SpecialResource) -> tuple[views.Taint, ...]:
    return tuple(views.Taint(key=t.key, value=t.value, effect=t.effect) for t in sr.spec.taints)


def is_ours(body: Mapping[str, Any], sr_uid: str) -> bool:
    """Whether ``body`` carries the controller owner reference to the SpecialResource of
    ``sr_uid``: the only proof that sro made it for that SpecialResource. The
    ``sro.dev/owner`` label is only the watch filter: anyone may set it."""
    refs = (body.get("metadata") or {}).get("ownerReferences")
    if not sr_uid or not isinstance(refs, list):
        return False
    return any(isinstance(r, Mapping) and r.get("uid") == sr_uid and r.get("controller") for r in refs)


def partition(
    owned: Iterable[projections.ObjectView], sr_uid: str
) -> tuple[tuple[projections.ObjectView, ...], tuple[projections.ObjectView, ...]]:
    """Labelled objects split into sro's (carrying its owner reference) and the others,
    which sro never updates, deletes or counts as its own. ControllerRevisions are in
    neither: the DaemonSet controller makes them, with the labels of sro's pod templates
    (``revisions`` reads them)."""
    mine: list[projections.ObjectView] = []
    foreign: list[projections.ObjectView] = []
    for view in owned:
        if view.ref.kind == REVISION_KIND:
            continue
        (mine if is_ours(view.body, sr_uid) else foreign).append(view)
    return tuple(mine), tuple(foreign)


REVISION_KIND = "ControllerRevision"


def revisions(
    owned: Iterable[projections.ObjectView], objects: Mapping[desired.ObjectRef, live_records.LiveObject]
) -> tuple[live_records.Revision, ...]:
    """The template history of the owned DaemonSets (ControllerRevisions they control)."""
    uids = {live.uid for live in objects.values() if live.ref.kind == "DaemonSet" and live.uid}
    found = (live_records.Revision.from_body(v.body) for v in owned if v.ref.kind == REVISION_KIND)
    return tuple(r for r in found if r is not None and r.owner_uid in uids)


def live_objects(
    owned: Iterable[projections.ObjectView],
) -> Mapping[desired.ObjectRef, live_records.LiveObject]:
    """Owned objects as the planner reads them; pods made by a controller are not owned objects."""
    out: dict[desired.ObjectRef, live_records.LiveObject] = {}
    for view in owned:
        if view.ref.kind == "Pod" and _controller_kind(view.body) in live_records.POD_CONTROLLERS:
            continue
        out[view.ref] = live_records.LiveObject.from_body(view.body)
    return MappingProxyType(out)


def finished_pods(
    gone: Iterable[views.PodView],
    *,
    sr: sr_model.SpecialResource,
    live: Container[tuple[str, str]],
    deleted: Container[str],
    proven: frozenset[desired.ObjectRef] = frozenset(),
) -> frozenset[desired.ObjectRef]:
    """``Observed.finished``: of the pods deleted after they succeeded since the last pass
    (``gone``, the cache's log), ``sr``'s own bare pods in its namespace that sro did not
    delete itself (``deleted``: uids; a pod sro deleted was closed, its proof withdrawn),
    and the proofs the last plan handed on (``proven``, ``Plan.finished``); of both, those
    not made again since (no ``live`` pod of the name: (namespace, name))."""
    fresh = (
        desired.ObjectRef(api_version="v1", kind="Pod", namespace=p.namespace, name=p.name)
        for p in gone
        if p.namespace == sr.spec.namespace and p.uid not in deleted and pods_seen.is_bare(p, sr)
    )
    return frozenset(ref for ref in (*fresh, *proven) if (ref.namespace, ref.name) not in live)


def _controller_kind(body: Mapping[str, Any]) -> str:
    for ref in (body.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("kind", ""))
    return ""


def watched_kinds(
    wanted: Iterable[desired.DesiredObject], owned: Iterable[projections.ObjectView]
) -> frozenset[tuple[str, str]]:
    """The kinds whose caches a pass of this SpecialResource rests on: Nodes, Pods, and
    every kind it wants or still has (whether those caches lag is asked of the runtime)."""
    kinds = {("v1", "Node"), ("v1", "Pod")}
    kinds.update((o.ref.api_version, o.ref.kind) for o in wanted)
    kinds.update((v.ref.api_version, v.ref.kind) for v in owned)
    return frozenset(kinds)


def peers(name: str, summaries: Iterable[PeerSummary]) -> finish.Peers:
    """What the other SpecialResources say of ``name``: conflicts and dependencies."""
    summaries = tuple(summaries)
    return finish.Peers(conflict=conflict_report(name, summaries), deps=dependency_report(name, summaries))


def namespace_ref(sr: sr_model.SpecialResource) -> desired.ObjectRef:
    """The operand namespace, as an object sro makes (and teardown deletes last)."""
    return desired.ObjectRef(api_version="v1", kind="Namespace", namespace="", name=sr.spec.namespace)


def observe(
    sr: sr_model.SpecialResource,
    *,
    wanted: desired.DesiredState,
    nodes: Iterable[views.NodeView],
    owned: Iterable[projections.ObjectView],
    pods: pods_seen.PodsSeen,
    previous: Mapping[str, Any],
    recipe_source: str,
    logs: Mapping[str, Mapping[str, str]] = MappingProxyType({}),
    log_reads: Mapping[str, datetime] = MappingProxyType({}),
    log_rate: float = log_polls.FLEET_READS_PER_SECOND,
    retries: Mapping[desired.ObjectRef, observed_.Retry] = MappingProxyType({}),
    lagging: frozenset[tuple[str, str]] = frozenset(),
    images: Mapping[str, tuple[observed_.ImageCheck, ...]] = MappingProxyType({}),
    drains: Mapping[str, tuple[str, ...]] = MappingProxyType({}),
    jobs: Mapping[str, tuple[str, ...]] = MappingProxyType({}),
    rechecked: frozenset[str] = frozenset(),
    preflight: observed_.Preflight = observed_.NO_PREFLIGHT,
    walk_memo: walk_memo_.Memo = walk_memo_.EMPTY,
    touched: walk_memo_.Touched | None = None,
    node_answers: Mapping[str, observed_.NodeAnswer] = MappingProxyType({}),
    finished: frozenset[desired.ObjectRef] = frozenset(),
) -> observed_.Observed:
    """The managed pass's ``Observed``, from what the caches hand out (and ``images``,
    what the registry said of each kernel group's images; ``pods``, the operand
    namespace's pods as ``pods_seen`` read them for ``owned``'s DaemonSets and Jobs).

    The operand namespace is sro's but not the recipe's: the planner must not see it as an
    object no longer desired (teardown sees it and deletes it last).
    """
    nodes = tuple(nodes)
    selected = frozenset(wanted.nodes)
    owned = tuple(owned)
    mine = [v for v in partition(owned, sr.uid)[0] if v.ref != namespace_ref(sr)]
    objects = {**live_objects(mine), **pods.bare}
    return observed_.Observed(
        generation=sr.generation,
        revisions=revisions(owned, objects),
        nodes={n.name: n for n in nodes if n.name in selected},
        departed=departed(sr.name, nodes, selected=selected),
        objects=objects,
        pods=tuple(pods.relevant.values()),
        pods_named=pods.relevant,
        pods_on=pods.on_node,
        workload_pods=tuple(pods.workload.values()),
        logs=logs,
        log_reads=log_reads,
        log_rate=log_rate,
        retries=retries,
        previous_status=previous,
        taints=sr_taints(sr),
        recipe_source=recipe_source,
        lagging=lagging,
        images=images,
        upgrade_policy=sr.spec.upgrade_policy,
        drains=drains,
        jobs=jobs,
        rechecked=rechecked,
        preflight=preflight,
        walk_memo=walk_memo,
        touched=touched,
        node_answers=node_answers,
        finished=finished,
    )


def observe_teardown(
    sr: sr_model.SpecialResource,
    *,
    owned: Iterable[projections.ObjectView],
    namespace_pods: Iterable[views.PodView],
    nodes: Iterable[views.NodeView],
    previous: Mapping[str, Any],
    lagging: frozenset[tuple[str, str]] = frozenset(),
) -> observed_.Observed:
    """Teardown's ``Observed``: every owned object (the namespace too) and every node
    carrying anything of this SpecialResource, whatever selects it now."""
    live = live_objects(partition(owned, sr.uid)[0])
    pods = pods_seen.read(namespace_pods, sr=sr, owners=pods_seen.owner_uids(live.values()))
    return observed_.Observed(
        generation=sr.generation,
        nodes={},
        departed=carrying(sr.name, nodes, sr_taints(sr)),
        objects={**live, **pods.bare},
        pods=tuple(pods.relevant.values()),
        previous_status=previous,
        taints=sr_taints(sr),
        lagging=lagging,
    )
