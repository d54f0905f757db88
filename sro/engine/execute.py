"""Carrying out one plan: object writes, deletions and node changes, overlapped; log reads started.

A pass at a thousand nodes holds hundreds of independent requests, and while it runs,
the nodes that just finished a state wait for the next pass to see them. So the parts
of a plan that do not depend on each other go out at the same time instead of one
phase after another:

* object applies, then the node changes (a state whose write was refused keeps its
  ready labels and ``complete`` back: ``lifecycle.held_back`` needs the applies' answer),
  each node's followers (``Plan.follow``) right after its own patch answered;
* deletions (stale objects, closed and failed pods: nothing applied in the same pass
  needs them gone first; a pod to re-create is created by a later pass, once its
  deletion shows in the cache);
* log reads (reads only), which the pass starts and does not wait for
  (``engine.pod_logs.Reads``: a kubelet out of reach must not hold every node's next pass);
* drains of nodes a driver upgrade empties (``engine.drains``: evictions of other
  workloads' pods, which nothing else in the pass touches), and the look at the jobs
  still running on nodes the upgrade waits for (``engine.upgrade_jobs``: reads only).

Each part keeps its own bound on requests in flight (``limit``). A part that must end
the reconcile (``errors.NotLeader``) cancels the others and is raised as itself.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import structlog

from sro.cache import projections
from sro.engine import drains, node_writes, pod_logs, ports, upgrade_jobs, writes
from sro.engine import sent as sent_
from sro.model import desired, views
from sro.model import specialresource as sr_model
from sro.plan import actions, lifecycle, outcomes
from sro.plan import observed as observed_

log = structlog.get_logger(__name__)


@dataclass(frozen=True, kw_only=True)
class Executed:
    """What carrying out a plan reported: every failure, what each drained node still
    holds (``Observed.drains`` of the next pass) and the jobs still running on each node
    the upgrade waits for (``Observed.jobs``)."""

    failures: tuple[outcomes.Failure, ...]
    drained: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    jobs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    node_answers: Mapping[str, observed_.NodeAnswer] = field(default_factory=dict)  # Written.answers
    absent: frozenset[desired.ObjectRef] = frozenset()  # deletions answered "already gone"
    deleted: tuple[lifecycle.Deletion, ...] = ()  # deletions done (``WriteReport.taken``)


async def execute(
    writer: ports.Writer,
    planned: actions.Plan,
    *,
    sr: sr_model.SpecialResource,
    nodes: tuple[views.NodeView, ...],
    live: Mapping[desired.ObjectRef, projections.ObjectView],
    foreign: Mapping[desired.ObjectRef, projections.ObjectView],
    sent: sent_.Sent,
    logs: dict[str, Mapping[str, str]],
    reads: pod_logs.Reads,
    lagging: frozenset[tuple[str, str]],
    limit: int,
) -> Executed:
    """Carry out ``planned`` (see the module docstring); ``sent`` and ``logs`` are the
    engine's memory of applied bodies and fetched tails, updated in place (``logs`` by
    ``reads`` once this returns too)."""

    async def apply(objects: tuple[desired.DesiredObject, ...]) -> writes.WriteReport:
        return await writes.apply_objects(
            writer,
            objects,
            sr=sr,
            live=live,
            foreign=foreign,
            opening=planned.opening,
            blocks=planned.blocks,
            limit=limit,
            sent=sent,
            lagging=lagging,
        )

    async def objects_then_nodes() -> tuple[writes.WriteReport, node_writes.Written]:
        applied = await apply(planned.apply)
        reports = [applied]

        async def follow(objects: Sequence[actions.Follower], shown: Mapping[str, Mapping[str, str]]) -> None:
            """The pods of states that just opened on a node, now that it shows their labels."""
            ready = writes.unsent(actions.followers(objects, shown), sr=sr, sent=sent)
            ready = tuple(o for o in ready if o.state not in applied.blocked_states)
            if ready:
                reports.append(await apply(ready))

        # Each node's followers go as soon as its own patch answered; those of a state
        # opening in this pass wait for every node's, to be dry-run together first.
        opening: list[actions.Follower] = []
        by_node: dict[str, list[actions.Follower]] = {}
        for f in planned.follow:
            if f.obj.state in planned.opening:
                opening.append(f)
            elif f.obj.node is not None:
                by_node.setdefault(f.obj.node, []).append(f)

        async def node_shown(node: str, labels: Mapping[str, str]) -> None:
            if objects := by_node.pop(node, None):  # once, whatever else names the node
                await follow(objects, {node: labels})

        written = await node_writes.carry_out(
            writer,
            lifecycle.held_back(planned.node_labels, sr_name=sr.name, blocked=applied.blocked_states),
            sr_name=sr.name,
            nodes=nodes,
            limit=limit,
            then=node_shown,
        )
        if opening:
            await follow(opening, written.labels)
        merged = functools.reduce(writes.merged, reports)
        if merged.applied:  # one line a pass, not one per node whose pods followed its labels
            log.info("objects applied", sr=sr.name, count=merged.applied)
        return merged, written

    reads.start(writer, planned.logs_needed, logs, limit=limit)  # first: a read waits on a kubelet
    try:
        async with asyncio.TaskGroup() as group:  # one part failing for good (NotLeader) stops all
            first = group.create_task(objects_then_nodes())
            deleting = group.create_task(
                writes.delete_objects(writer, planned.delete, sr_name=sr.name, limit=limit)
            )
            draining = group.create_task(drains.drain(writer, planned.drains, limit=limit))
            jobs = group.create_task(upgrade_jobs.check(writer, planned.job_checks, limit=limit))
    except ExceptionGroup as failed:
        raise failed.exceptions[0] from None
    (applied, written), deleted = first.result(), deleting.result()
    node_failures = written.failures
    failures = (
        *applied.failures,
        *deleted.failures,
        *(outcomes.Failure(state=f"node {n}", ref=None, error=e) for n, e in node_failures),
    )
    return Executed(
        failures=failures,
        drained=draining.result(),
        jobs=jobs.result(),
        node_answers=written.answers,
        absent=deleted.absent,
        deleted=deleted.taken,
    )
