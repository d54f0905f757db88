"""The pure planner: what the cluster shows for one SpecialResource -> what to do next.

The engine calls one of these every reconcile, executes the ``Plan`` it gets, hands what
the writes reported to ``sro.plan.finish`` and writes the status that settles on. Nothing
here does I/O or reads a clock.

* ``plan(wanted, seen, *, now) -> Plan`` — the managed case (selected nodes may be none);
  ``sro.plan.actions`` says what each field of the ``Plan`` holds.
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
from datetime import datetime, timedelta
from typing import Any

from sro.model import desired, progress
from sro.plan import (
    actions,
    builds,
    finished_pods,
    images,
    lifecycle,
    log_polls,
    node_parts,
    node_patches,
    pod_retries,
    preflight,
    resets,
    upgrade_records,
    upgrade_status,
    walk_memo,
)
from sro.plan import observed as observed_
from sro.plan import teardown as teardown_
from sro.plan import upgrade as upgrade_
from sro.plan import walk as walk_
from sro.status import events, summary

RECIPE_RECHECK = 30.0
"""Seconds before a SpecialResource whose pass was refused (a recipe error, a namespace in
use, a permanent write failure), or whose recipe comes from a drop-in directory, looks
again: directories are not watched, so an added, fixed or edited recipe is noticed within
this time without a restart (reading the caches and the files writes nothing)."""
PASS_WRITES = 256
"""At most this many per-node objects, as many node changes and as many log tails
(``log_polls``) per pass; the rest wait
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


def _to_apply(
    wanted: desired.DesiredState,
    seen: observed_.Observed,
    walked: progress.Walk,
    per_node: node_parts.Parts,
    *,
    started: set[str],
) -> tuple[tuple[desired.DesiredObject, ...], tuple[actions.Follower, ...]]:
    """What to apply now, and what to apply once this pass's node patches have landed:
    the nodes' own objects (``per_node``) and the cluster-wide ones of the states open
    somewhere or with an object in the cluster (``started``)."""
    opened = {state for state in walked.order if walked.open_anywhere(state)}
    rank = {state: i for i, state in enumerate(walked.order)}
    chosen = list(per_node.now)
    for obj in wanted.cluster_wide:
        if obj.state not in opened and obj.state not in started:
            continue
        if obj.kind == "Pod":
            if obj.wait and walked.phase_counts(obj.state).get(progress.Phase.COMPLETE):
                continue  # it succeeded and is gone since (the walk's record): not again
            if walked.ref(obj) in seen.objects or node_parts.made(seen, walked.ref(obj)):
                continue  # a pod's spec is immutable: one that must change is deleted, then made again
        chosen.append(obj)

    def order(o: desired.DesiredObject) -> tuple[int, int, desired.ObjectRef]:
        return (lifecycle.kind_rank(o.kind), rank.get(o.state, 0), walked.ref(o))

    return tuple(sorted(chosen, key=order)), tuple(sorted(per_node.later, key=lambda f: order(f.obj)))


def _bounded(
    objects: tuple[desired.DesiredObject, ...], follow: tuple[actions.Follower, ...]
) -> tuple[tuple[desired.DesiredObject, ...], tuple[actions.Follower, ...], bool]:
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


def _carried(
    changes: Sequence[node_patches.NodeChange], walked: progress.Walk
) -> tuple[node_patches.NodeChange, ...]:
    """The node changes this pass sends, by node name: all of them when they fit in
    ``PASS_WRITES``; else those of the nodes furthest behind (fewest states complete), by
    name among equals. A converging fleet is ready when its slowest node is: taken by name,
    the first nodes, their next state done seconds later, were served pass after pass while
    the last nodes' drivers waited minutes for their label."""
    if len(changes) <= PASS_WRITES:
        return tuple(changes)
    complete = progress.Phase.COMPLETE

    def behind(change: node_patches.NodeChange) -> tuple[int, str]:
        states = walked.nodes.get(change.node)
        done = sum(1 for s in states.values() if s.phase is complete) if states else 0
        return done, change.node

    return tuple(sorted(sorted(changes, key=behind)[:PASS_WRITES], key=lambda c: c.node))


def _seconds(delays: list[timedelta]) -> float | None:
    return min(delays).total_seconds() if delays else None


def plan(rendered: desired.DesiredState, observed: observed_.Observed, *, now: datetime) -> actions.Plan:
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
    upgrading = upgrade_records.replacing(wanted.sr_name, seen)
    reset = resets.kernel_resets(wanted, seen) - verdict.held
    walked = walk_.walk(wanted, seen, reset=reset, upgrading=upgrading)
    rollout = upgrade_.plan(wanted, seen, walked, now=now)
    labelled = lifecycle.node_changes(wanted, seen, walked)
    node_labels = upgrade_status.merge(
        images.node_changes(labelled.changes, wanted, seen, walked, verdict), rollout.node_changes
    )
    carried = _carried(node_labels, walked)
    setting = {c.node: c.labels for c in carried}
    # Nodes whose `complete` label waits for a later pass: not counted complete yet, so a
    # Ready status never comes before the labels a workload may be scheduled by.
    done = lifecycle.complete_label(wanted.sr_name)
    unlabelled = frozenset(
        c.node for c in node_labels if c.labels.get(done) is not None and c.node not in setting
    )
    per_node = node_parts.parts(wanted, seen, walked, setting=setting)
    memo = dataclasses.replace(labelled.memo, render=(handed, rendered), parts=per_node.memo)
    walked = dataclasses.replace(walked, memo=memo)  # the next plan reuses unchanged nodes'
    stale = images.keep_last_good(lifecycle.stale_objects(wanted, seen, also=made.apply), verdict)
    stale = tuple(d for d in stale if d.ref not in made.keep)
    retry = pod_retries.retries(wanted, seen, walked, now=now)
    candidates = lifecycle.deletion_order(
        (
            *stale,
            *per_node.closed,
            *retry.delete,
            *rollout.delete,
        )
    )
    delete = tuple(d for d in candidates if lifecycle.fresh_enough(d, seen))
    held = len(delete) < len(candidates)  # a cache behind sro's own writes: look again soon
    if held and reset:
        carried = resets.hold_records(
            carried, wanted, walked, reset=reset, closed=per_node.closed, sent=delete
        )
    polled = log_polls.polls(
        walked.logs_needed,
        seen.pods_by_name,
        read=seen.log_reads,
        now=now,
        limit=PASS_WRITES,
        rate=seen.log_rate,
    )
    delays = [
        d
        for d in (
            retry.wake_in,
            polled.wake_in,
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
            unlabelled=unlabelled,
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
    started: set[str] = set()  # states opened before: one object of each in the cluster is enough
    for o in wanted.objects:
        if o.state not in started and walked.ref(o) in seen.objects:
            started.add(o.state)
    now_, later = _to_apply(wanted, seen, walked, per_node, started=started)
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
    return actions.Plan(
        apply=to_apply,
        follow=follow,
        opening=frozenset(o.state for o in (*to_apply, *(f.obj for f in follow)) if o.state not in started),
        delete=delete,
        node_labels=carried,
        status=status,
        removed=tuple(d.ref for d in stale if d in delete),
        events=(
            *events.transitions(previous, status),
            *events.render_warnings(previous, status, warnings=wanted.warnings),
            *upgrade_status.events(previous, status),
        ),
        logs_needed=(*polled.due, *made.logs_needed),
        drains=rollout.drains,
        job_checks=rollout.job_checks,
        recheck=made.recheck,
        requeue_after=_seconds(delays),
        retries=retry.records,
        blocks=lifecycle.downstream(wanted.states),
        walk=walked,
        finished=finished_pods.still_needed(wanted, seen, walked),
    )


def plan_teardown(*, sr_name: str, seen: observed_.Observed, generation: int, now: datetime) -> actions.Plan:
    """Plan removing everything a SpecialResource made (``Removed``, or its deletion)."""
    down = teardown_.teardown(sr_name=sr_name, seen=seen, now=now)
    remaining = 0 if down.done else max(len(seen.objects) + len(down.node_changes), 1)
    status = summary.status_for_management(
        seen.previous_status, state="Removed", generation=generation, now=now, remaining=remaining
    )
    return actions.Plan(
        apply=(),
        delete=down.delete,
        node_labels=down.node_changes,
        status=status,
        # Only the removal itself (ObjectsRemoved, once deleted): every kernel group and
        # state "ending" here is no news.
        removed=tuple(d.ref for d in down.delete),
        requeue_after=None if down.done else TEARDOWN_POLL,
        finalizer_removable=down.done,
    )


def plan_unmanaged(*, previous: Mapping[str, Any], generation: int, now: datetime) -> actions.Plan:
    """``managementState: Unmanaged``: change nothing, and say so."""
    status = summary.status_for_management(previous, state="Unmanaged", generation=generation, now=now)
    return actions.Plan(apply=(), delete=(), node_labels=(), status=status)


def plan_refused(
    *,
    previous: Mapping[str, Any],
    reason: str,
    message: str,
    generation: int,
    now: datetime,
    recheck: bool = True,
) -> actions.Plan:
    """A pass stopped before anything is written: Degraded with ``reason``, the stored rows
    kept (they still describe the nodes), and a look again in ``RECIPE_RECHECK`` when
    ``recheck`` (a fix may come from a file no watch sees)."""
    status = summary.degraded(
        previous, previous, reason=reason, message=message, generation=generation, now=now
    )
    return actions.Plan(
        apply=(),
        delete=(),
        node_labels=(),
        status=status,
        requeue_after=RECIPE_RECHECK if recheck else None,
    )
