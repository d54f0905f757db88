"""The pure planner: what the cluster shows for one SpecialResource -> what to do next.

The engine calls one of these every reconcile, executes the ``Plan`` it gets, hands what
the writes reported to ``sro.plan.finish`` and writes the status that settles on. Nothing
here does I/O or reads a clock.

* ``plan(wanted, seen, *, now) -> Plan`` — the managed case (selected nodes may be none).
  ``Plan`` holds:
  ``apply``    desired objects to apply now, in dependency order (namespace, CRDs, RBAC and
               accounts, config and services, other kinds, workloads): every object of a
               state open on at least one node (or already in the cluster: it opened
               before); a per-node pod only where its state is open *and* the node
               already carries the labels of its ``after`` states (the pod is pinned by
               ``nodeName``, so the kubelet, not the scheduler, checks its required
               affinity and would fail it; one whose labels this pass sets is in
               ``follow``);
               never a failed pod waiting for its retry; at most ``PASS_WRITES`` per-node
               objects a pass (and as many ``node_labels``), the next pass at once;
  ``follow``   per-node objects whose node gets the missing ``after`` labels in this very
               pass (``node_labels``): ``followers`` picks those whose node's patch landed
               with them, and the engine applies them right after it, so a state that
               completes on a node starts the next one's pod in the same pass;
  ``delete``   ``lifecycle.Deletion``s: owned objects no longer desired, per-node pods of
               states not open on their node (they re-run when it reopens), failed pods
               whose backoff has passed, driver pods of an older pod template on the
               nodes whose upgrade reached ``replacing`` (``upgrade``) — workloads first;
  ``node_labels`` ``node_patches.NodeChange``s: state labels, the ``complete`` label, the
               kernel-group annotation and taints, for selected and departed nodes;
  ``opening``  the states ``apply`` writes to for the first time (none of their objects
               exists yet): the engine dry-runs all their objects before writing any;
  ``blocks``   for each state, the states that come after it: a state whose write is
               refused blocks these too (the engine leaves them unwritten, and
               ``lifecycle.held_back`` keeps their ready labels off);
  ``logs_needed`` pods whose log tails the engine must fetch into ``Observed.logs``;
  ``drains``   nodes whose upgrade is draining them (``upgrade.DrainRequest``): the engine
               evicts their pods and hands what is left back in ``Observed.drains``;
  ``job_checks`` nodes whose upgrade waits for their jobs (``upgrade_jobs.JobCheck``): the
               engine lists those still running into ``Observed.jobs``;
  ``requeue_after`` seconds until something time-based is due (a retry, a log poll, a
               recipe recheck), or ``None``: watches wake the engine for everything else;
  ``status``   the whole status body; ``events`` transition Events;
  ``retries``  the retry bookkeeping to hand back in the next ``Observed``.
* ``plan_teardown(*, sr_name, seen, generation, now)`` — ``managementState: Removed`` and
  deletion: delete everything, strip every node, the Removed status;
  ``finalizer_removable`` once nothing is left, else look again in ``TEARDOWN_POLL``.
* ``plan_unmanaged`` (hands off, say so) and ``plan_refused`` (something stops the pass
  before anything is written: an unparseable SpecialResource, a recipe error, a namespace
  sro did not create): only a status, and when to look again.

Where each decision lives: ``observed`` (the input record), ``readiness`` (rules per
kind), ``walk`` (each node's phase in each state), ``lifecycle`` (node labels, kernel
resets, retries, deletions, teardown), ``sro.status.summary`` / ``conditions`` /
``events`` (the status body and its Events), ``finish`` (what the writes change of it).
This module only assembles them.

Errors: a state graph with a cycle or an unknown ``after``, or a state name that makes no
valid label key, raises ``sro.errors.RecipeInvalid`` (render validates these first).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

from sro.model import desired, progress
from sro.plan import (
    builds,
    finished_pods,
    images,
    lifecycle,
    log_polls,
    node_patches,
    pod_retries,
    preflight,
    upgrade_jobs,
    upgrade_records,
    upgrade_status,
    walk_memo,
)
from sro.plan import observed as observed_
from sro.plan import teardown as teardown_
from sro.plan import upgrade as upgrade_
from sro.plan import walk as walk_
from sro.status import events, summary
from sro.status.body import StatusBody

RECIPE_RECHECK = 30.0
"""Seconds before a SpecialResource whose pass was refused (a recipe error, a namespace in
use, a permanent write failure), or whose recipe comes from a drop-in directory, looks
again: directories are not watched, so an added, fixed or edited recipe is noticed within
this time without a restart (reading the caches and the files writes nothing)."""
PASS_WRITES = 256
"""At most this many per-node objects and as many node changes per pass; the rest wait
for the next pass, which comes at once. A pass is then bounded in time whatever the
cluster's size (at 5,000 nodes one pass with every validation pod would outlast the
reconcile timeout), and a node that just finished a state is seen by a pass that started
well after, not by one still busy with thousands of writes from before."""
CATCH_UP = timedelta(seconds=1)
"""How soon to look again when a deletion waited for a cache to show sro's own last write
(the watch brings it within milliseconds to seconds; the event wakes the key anyway)."""
TEARDOWN_POLL = 2.0
"""Seconds between teardown passes while objects are still going away (a namespace takes a
few seconds); watches also wake the engine, this is the floor."""


@dataclass(frozen=True, kw_only=True)
class Plan:
    """Everything one reconcile should do; see the module docstring for each field."""

    apply: tuple[desired.DesiredObject, ...]
    delete: tuple[lifecycle.Deletion, ...]
    follow: tuple[Follower, ...] = ()
    node_labels: tuple[node_patches.NodeChange, ...]
    status: StatusBody
    events: tuple[events.Event, ...] = ()
    # What the ObjectsRemoved Event names, for ``events.carried_out`` after the deletions.
    removed: tuple[desired.ObjectRef, ...] = ()
    logs_needed: tuple[progress.LogRequest, ...] = ()
    drains: tuple[upgrade_records.DrainRequest, ...] = ()
    job_checks: tuple[upgrade_jobs.JobCheck, ...] = ()
    recheck: tuple[tuple[str, str], ...] = ()
    requeue_after: float | None = None
    retries: Mapping[desired.ObjectRef, observed_.Retry] = field(default_factory=lambda: MappingProxyType({}))
    blocks: Mapping[str, frozenset[str]] = field(default_factory=lambda: MappingProxyType({}))
    opening: frozenset[str] = frozenset()
    walk: progress.Walk | None = None
    finished: frozenset[desired.ObjectRef] = frozenset()
    """Of ``Observed.finished``, the proofs the next pass still needs (``finished_pods``)."""
    finalizer_removable: bool = False


_PENDING = progress.NodeState(phase=progress.Phase.PENDING)


@dataclass(frozen=True, kw_only=True)
class Follower:
    """A per-node object to apply once its node shows ``labels`` ready (``followers``)."""

    obj: desired.DesiredObject
    labels: tuple[str, ...]


def _missing(sr_name: str, labels: Mapping[str, str], states: tuple[str, ...]) -> tuple[str, ...]:
    """The ready labels of ``states`` that ``labels`` lacks."""
    keys = (lifecycle.state_label(sr_name, s) for s in states)
    return tuple(k for k in keys if labels.get(k) != lifecycle.READY_VALUE)


def _made(seen: observed_.Observed, ref: desired.ObjectRef) -> bool:
    """Whether the pod ``ref`` exists, or succeeded and was collected since the last pass
    (``Observed.finished``: this pass records its state, it is not made again)."""
    return seen.pod(ref) is not None or ref in seen.finished


def _to_apply(
    wanted: desired.DesiredState,
    seen: observed_.Observed,
    walked: progress.Walk,
    *,
    setting: Mapping[str, Mapping[str, str | None]],
    started: set[str],
) -> tuple[tuple[desired.DesiredObject, ...], tuple[Follower, ...]]:
    """What to apply now, and what to apply once this pass's node patches (``setting``:
    labels by node) have landed; ``started``: states with an object in the cluster."""
    opened = {state for state in walked.order if walked.open_anywhere(state)}
    rank = {state: i for i, state in enumerate(walked.order)}
    after = {s.name: s.after for s in wanted.states}
    chosen = []
    follow = []
    for obj in wanted.objects:
        missing: tuple[str, ...] = ()
        if obj.node is not None:
            here = walked.nodes.get(obj.node, {}).get(obj.state, _PENDING)
            if not here.open:
                continue
            if obj.kind == "Pod" and _made(seen, walked.ref(obj)):
                continue  # made already (most of them, once a node has walked): see below
            if obj.kind == "Pod" and obj.wait and here.phase is progress.Phase.COMPLETE:
                continue  # it succeeded there and is gone since (the walk's record): not again
            node = seen.nodes.get(obj.node)
            # Its labels come first: a pinned pod is refused by a node without them.
            missing = _missing(wanted.sr_name, node.labels if node else {}, after.get(obj.state, ()))
            coming = setting.get(obj.node, {})
            if any(coming.get(k) != lifecycle.READY_VALUE for k in missing):
                continue
        elif obj.state not in opened and obj.state not in started:
            continue
        elif obj.kind == "Pod" and obj.wait and walked.phase_counts(obj.state).get(progress.Phase.COMPLETE):
            continue  # it succeeded and is gone since (the walk's record): not again
        if obj.kind == "Pod" and (walked.ref(obj) in seen.objects or _made(seen, walked.ref(obj))):
            continue  # a pod's spec is immutable: one that must change is deleted, then made again
        if missing:
            follow.append(Follower(obj=obj, labels=missing))
        else:
            chosen.append(obj)

    def order(o: desired.DesiredObject) -> tuple[int, int, desired.ObjectRef]:
        return (lifecycle.kind_rank(o.kind), rank.get(o.state, 0), walked.ref(o))

    return tuple(sorted(chosen, key=order)), tuple(sorted(follow, key=lambda f: order(f.obj)))


def _bounded(
    objects: tuple[desired.DesiredObject, ...], follow: tuple[Follower, ...]
) -> tuple[tuple[desired.DesiredObject, ...], tuple[Follower, ...], bool]:
    """``objects`` and ``follow`` with at most ``PASS_WRITES`` per-node ones between them
    (the first, in plan order: every cluster-wide object stays), and whether any was left
    for the next pass."""
    kept: list[desired.DesiredObject] = []
    per_node = 0
    for obj in objects:
        if obj.node is not None:
            per_node += 1
            if per_node > PASS_WRITES:
                continue
        kept.append(obj)
    room = max(PASS_WRITES - per_node, 0)
    return tuple(kept), follow[:room], per_node + len(follow) > PASS_WRITES


def followers(
    follow: Sequence[Follower], shown: Mapping[str, Mapping[str, str]]
) -> tuple[desired.DesiredObject, ...]:
    """The ``follow`` objects whose node now shows their labels ready (``shown``: each
    node's labels as its patch answered, or as cached when it needed none)."""
    return tuple(
        f.obj
        for f in follow
        if f.obj.node is not None
        and all(shown.get(f.obj.node, {}).get(k) == lifecycle.READY_VALUE for k in f.labels)
    )


def _seconds(delays: list[timedelta]) -> float | None:
    return min(delays).total_seconds() if delays else None


def plan(rendered: desired.DesiredState, observed: observed_.Observed, *, now: datetime) -> Plan:
    """Plan one reconcile of a managed SpecialResource; see the module docstring."""
    # A new render holds the last walk's instance of each object it did not change, so
    # the walk's memory recalls every node whose own objects are unchanged (``walk_memo``).
    handed, rendered = rendered, walk_memo.interned(rendered, observed.walk_memo)
    parts = builds.split(rendered, observed)  # build states are not walked (``builds``)
    wanted, seen = parts.wanted, parts.seen
    verdict = images.decide(wanted, seen)  # images a registry says are not there (if checked)
    made = builds.decide(parts, observed, rechecked=observed.rechecked, now=now)
    early = preflight.ahead(observed.preflight, wanted)  # spec.preflight.build: ahead of the nodes
    if early.specs:
        seen_early = preflight.seen_for(observed, observed.preflight)
        made = builds.merge(made, builds.decide(early, seen_early, rechecked=observed.rechecked, now=now))
    upgrading = upgrade_records.replacing(wanted.sr_name, seen.nodes)
    walked = walk_.walk(
        wanted, seen, reset=lifecycle.kernel_resets(wanted, seen) - verdict.held, upgrading=upgrading
    )
    rollout = upgrade_.plan(wanted, seen, walked, now=now)
    kept = dataclasses.replace(wanted, objects=(*wanted.objects, *made.apply))
    stale = images.keep_last_good(lifecycle.stale_objects(kept, seen), verdict)
    stale = tuple(d for d in stale if d.ref not in made.keep)
    retry = pod_retries.retries(wanted, seen, walked, now=now)
    candidates = lifecycle.deletion_order(
        (
            *stale,
            *lifecycle.closed_pods(wanted, seen, walked),
            *retry.delete,
            *rollout.delete,
        )
    )
    delete = tuple(d for d in candidates if lifecycle.fresh_enough(d, seen))
    held = len(delete) < len(candidates)  # a cache behind sro's own writes: look again soon
    delays = [
        d
        for d in (
            retry.wake_in,
            log_polls.log_poll(walked.logs_needed, seen.pods, now=now),
            CATCH_UP if held else None,
            rollout.wake_in,
            made.wake_in,
        )
        if d is not None
    ]
    if seen.recipe_source == "directory":
        delays.append(timedelta(seconds=RECIPE_RECHECK))  # drop-in directories are not watched
    previous = seen.previous_status
    if walked.nodes:
        status = summary.status_from_walk(
            wanted,
            walked,
            previous=previous,
            generation=seen.generation,
            recipe_source=seen.recipe_source,
            now=now,
        )
    else:
        status = summary.status_no_nodes(
            previous, wanted=wanted, generation=seen.generation, recipe_source=seen.recipe_source, now=now
        )
    status = preflight.with_rows(status, observed.preflight)
    shown = dataclasses.replace(verdict, missing=verdict.missing - made.building)  # building: no news
    status = images.status(status, wanted, seen, shown, now=now)
    status = builds.status(status, made, previous=previous, generation=seen.generation, now=now)
    labelled = lifecycle.node_changes(wanted, seen, walked)
    memo = dataclasses.replace(labelled.memo, render=(handed, rendered))
    walked = dataclasses.replace(walked, memo=memo)  # the next plan reuses unchanged nodes'
    node_labels = upgrade_status.merge(
        images.node_changes(labelled.changes, wanted, seen, walked, verdict), rollout.node_changes
    )
    setting = {c.node: c.labels for c in node_labels[:PASS_WRITES]}
    started: set[str] = set()  # states opened before: one object of each in the cluster is enough
    for o in wanted.objects:
        if o.state not in started and walked.ref(o) in seen.objects:
            started.add(o.state)
    now_, later = _to_apply(wanted, seen, walked, setting=setting, started=started)
    restored = tuple(rollout.restore.get(o.ref, o) for o in now_)  # a rollback
    allowed = {o.ref for o in images.withhold((*restored, *(f.obj for f in later)), verdict)}
    to_apply, follow, cut_objects = _bounded(
        tuple(o for o in restored if o.ref in allowed), tuple(f for f in later if f.obj.ref in allowed)
    )
    to_apply = (*to_apply, *sorted(made.apply, key=lambda o: (lifecycle.kind_rank(o.kind), o.ref)))
    status = upgrade_status.with_status(
        status,
        halted=rollout.halted,
        upgrade=rollout.status,
        previous=previous,
        generation=seen.generation,
        now=now,
    )
    if len(node_labels) > PASS_WRITES or cut_objects:
        delays.append(timedelta(0))  # more to write than one pass carries: go on at once
    started.update(o.state for o in made.apply if o.ref in seen.objects)
    removed = [d.ref for d in stale if d in delete]
    return Plan(
        apply=to_apply,
        follow=follow,
        opening=frozenset(o.state for o in (*to_apply, *(f.obj for f in follow)) if o.state not in started),
        delete=delete,
        node_labels=node_labels[:PASS_WRITES],
        status=status,
        removed=tuple(removed),
        events=(
            *events.transitions(previous, status, removed=removed),
            *events.render_warnings(previous, status, warnings=wanted.warnings),
            *upgrade_status.events(previous, status),
        ),
        logs_needed=(*walked.logs_needed, *made.logs_needed),
        drains=rollout.drains,
        job_checks=rollout.job_checks,
        recheck=made.recheck,
        requeue_after=_seconds(delays),
        retries=retry.records,
        blocks=lifecycle.downstream(wanted.states),
        walk=walked,
        finished=finished_pods.still_needed(wanted, seen, walked),
    )


def plan_teardown(*, sr_name: str, seen: observed_.Observed, generation: int, now: datetime) -> Plan:
    """Plan removing everything a SpecialResource made (``Removed``, or its deletion)."""
    down = teardown_.teardown(sr_name=sr_name, seen=seen, now=now)
    remaining = 0 if down.done else max(len(seen.objects) + len(down.node_changes), 1)
    status = summary.status_for_management(
        seen.previous_status, state="Removed", generation=generation, now=now, remaining=remaining
    )
    return Plan(
        apply=(),
        delete=down.delete,
        node_labels=down.node_changes,
        status=status,
        # Only the removal itself: every kernel group and state "ending" here is no news.
        events=events.transitions({}, {}, removed=[d.ref for d in down.delete]),
        removed=tuple(d.ref for d in down.delete),
        requeue_after=None if down.done else TEARDOWN_POLL,
        finalizer_removable=down.done,
    )


def plan_unmanaged(*, previous: Mapping[str, Any], generation: int, now: datetime) -> Plan:
    """``managementState: Unmanaged``: change nothing, and say so."""
    status = summary.status_for_management(previous, state="Unmanaged", generation=generation, now=now)
    return Plan(apply=(), delete=(), node_labels=(), status=status)


def plan_refused(
    *,
    previous: Mapping[str, Any],
    reason: str,
    message: str,
    generation: int,
    now: datetime,
    recheck: bool = True,
) -> Plan:
    """A pass stopped before anything is written: Degraded with ``reason``, the stored rows
    kept (they still describe the nodes), and a look again in ``RECIPE_RECHECK`` when
    ``recheck`` (a fix may come from a file no watch sees)."""
    status = summary.degraded(
        previous, previous, reason=reason, message=message, generation=generation, now=now
    )
    return Plan(
        apply=(),
        delete=(),
        node_labels=(),
        status=status,
        requeue_after=RECIPE_RECHECK if recheck else None,
    )
