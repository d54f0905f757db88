"""The end of a reconcile: the plan's status, unless what the writes reported outranks it.

The planner computes the status from the walk of the nodes before anything is written.
The writes then report what the API server made of them (``outcomes.Failure``), and the
peers (other SpecialResources) may hold this one back. Each of these makes the
SpecialResource Degraded with its own reason while the rows (recipe, nodes, kernels,
states) still describe the walk, in this order of precedence:

1. a write the API server refused (``ApplyFailed``, with the server's message), or a
   write that failed transiently in every pass for longer than ``TRANSIENT_BOUND``;
2. a dependency missing or in a cycle (``DependencyMissing`` / ``DependencyCycle``);
3. nodes lost to an earlier SpecialResource of the same recipe (``ConflictingNodeSelector``).

A transient failure still within the bound is not Degraded: it shows in the message of
the state it concerns, and the engine retries with backoff. ``finish`` also owns the
Events (the plan's when its status stands, else the transitions to the final status) and
when to look again.

Pure. Condition times follow the status actually stored (``previous``), so recomputing an
unchanged world changes nothing and writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sro.model import desired
from sro.plan import actions, conflicts, dependencies, outcomes, planner
from sro.status import events, summary
from sro.status.body import StateRow, StatusBody

TRANSIENT_BOUND = 180.0
"""Seconds a transient write failure may persist before it is reported as ApplyFailed."""
RECIPE_RECHECK = planner.RECIPE_RECHECK
_FAILURES_SHOWN = 3
_NODES_SHOWN = 5
_RETRY_CAP = 30.0


@dataclass(frozen=True, kw_only=True)
class Transient:
    """The writes failing transiently, each by its ``outcomes.Failure.key``: since the first
    of the consecutive passes it failed in, and how many. A write that did not fail in a
    pass (it went through, or was not tried) drops out: on a large fleet a few different
    nodes' patches meet a conflict in nearly every pass, and that churn is not one failure
    persisting."""

    failing: Mapping[str, tuple[datetime, int]]

    @property
    def since(self) -> datetime:
        """When the longest-failing write began failing."""
        return min(since for since, _ in self.failing.values())

    @property
    def attempts(self) -> int:
        """The longest run of passes one write has failed in (the backoff's exponent)."""
        return max(passes for _, passes in self.failing.values())

    def expired(self, now: datetime) -> bool:
        return _overdue(self.since, now)

    def persisting(self, failures: Sequence[outcomes.Failure], now: datetime) -> list[outcomes.Failure]:
        """Those of ``failures`` that have failed for longer than ``TRANSIENT_BOUND``."""
        return [f for f in failures if f.key in self.failing and _overdue(self.failing[f.key][0], now)]


def _overdue(since: datetime, now: datetime) -> bool:
    """Whether a write failing since ``since`` has failed past ``TRANSIENT_BOUND``."""
    return (now - since).total_seconds() > TRANSIENT_BOUND


@dataclass(frozen=True, kw_only=True)
class Outcomes:
    """What executing a plan reported: every write not taken, and whether log tails changed."""

    failures: tuple[outcomes.Failure, ...] = ()
    absent: frozenset[desired.ObjectRef] = frozenset()  # deletions answered "already gone"


@dataclass(frozen=True, kw_only=True)
class Peers:
    """What other SpecialResources say of this one: conflicts and dependencies."""

    conflict: conflicts.ConflictReport = field(default_factory=conflicts.ConflictReport)
    deps: dependencies.DependencyReport = field(default_factory=dependencies.DependencyReport)


@dataclass(frozen=True, kw_only=True)
class Finished:
    """The status to write, the Events it records, when to look again, and the run of
    transient failures to remember for the next pass."""

    status: StatusBody
    events: tuple[events.Event, ...]
    requeue_after: float | None
    transient: Transient | None


def _describe(failures: Sequence[outcomes.Failure]) -> str:
    shown = "; ".join(f.describe() for f in failures[:_FAILURES_SHOWN])
    more = len(failures) - _FAILURES_SHOWN
    return f"{shown} (and {more} more)" if more > 0 else shown


def _transient(
    before: Transient | None, failures: Sequence[outcomes.Failure], *, now: datetime
) -> Transient | None:
    earlier = before.failing if before is not None else {}
    failing: dict[str, tuple[datetime, int]] = {}
    for f in failures:
        if not f.permanent and f.key not in failing:
            since, passes = earlier.get(f.key, (now, 0))
            failing[f.key] = (since, passes + 1)
    return Transient(failing=failing) if failing else None


def finish(
    planned: actions.Plan,
    done: Outcomes,
    *,
    previous: Mapping[str, Any],
    peers: Peers,
    transient: Transient | None,
    generation: int,
    now: datetime,
) -> Finished:
    """The final status, Events and requeue of a managed pass, given what its writes did."""
    failures = done.failures
    permanent = [f for f in failures if f.permanent]
    passing = [f for f in failures if not f.permanent]
    run = _transient(transient, failures, now=now)
    status = _with_waiting_nodes(planned.status, peers.deps)

    def fail(reason: str, message: str) -> StatusBody:
        return summary.degraded(
            status, previous, reason=reason, message=message, generation=generation, now=now
        )

    if permanent:
        status = fail("ApplyFailed", _describe(permanent))
    elif run is not None and run.expired(now):
        since = run.since.strftime("%H:%M:%SZ")
        status = fail("ApplyFailed", f"failing since {since}: {_describe(run.persisting(passing, now))}")
    elif not peers.deps.ok:
        status = fail(peers.deps.reason, peers.deps.message())
    elif not peers.conflict.ok:
        status = fail("ConflictingNodeSelector", peers.conflict.message())
    elif passing:
        status = _with_retry_messages(status, passing)
    delays = [
        d
        for d in (
            planned.requeue_after,
            min(2.0 ** min(run.attempts, 8), _RETRY_CAP) if run is not None else None,
            RECIPE_RECHECK if permanent else None,
        )
        if d is not None
    ]
    return Finished(
        status=status,
        events=(
            *_events(previous, status, planned),
            *events.objects_removed(planned.removed, absent=done.absent),
        ),
        requeue_after=min(delays) if delays else None,
        transient=run,
    )


def _events(
    previous: Mapping[str, Any], status: StatusBody, planned: actions.Plan
) -> tuple[events.Event, ...]:
    """The plan's Events when its status stands; else the transitions to the final status
    (plus the plan's render warnings, which no status comparison can find)."""
    if status is planned.status:
        return planned.events
    kept = tuple(e for e in planned.events if e.reason == events.RENDER_WARNINGS)
    return (*events.transitions(previous, status), *kept)


def _with_waiting_nodes(status: StatusBody, deps: dependencies.DependencyReport) -> StatusBody:
    """The status with the first unfinished state's row naming the nodes that wait for a
    dependency, and which one: the row is where an administrator looks for a node."""
    if deps.ok or deps.cycle or not deps.waiting:
        return status
    names = sorted(deps.waiting)
    blocking = ", ".join(deps.absent or tuple(sorted(deps.uncovered)))
    more = len(names) - _NODES_SHOWN
    shown = ", ".join(names[:_NODES_SHOWN]) + (f" and {more} more" if more > 0 else "")
    text = f"{shown}: waiting for SpecialResource {blocking}, which is missing or does not select them"
    rows = [StateRow(**r) for r in status.get("states") or ()]
    target = next((r for r in rows if r["phase"] != "Complete"), rows[0] if rows else None)
    if target is None:
        return status
    old = target["message"]
    target["message"] = f"{text}; {old}" if old else text
    return {**status, "states": rows}


def _with_retry_messages(status: StatusBody, failures: Sequence[outcomes.Failure]) -> StatusBody:
    """The status with each failing state's row saying what is being retried."""
    by_state: dict[str, list[outcomes.Failure]] = {}
    for failure in failures:
        by_state.setdefault(failure.state, []).append(failure)
    rows: list[StateRow] = []
    unplaced = dict(by_state)
    for row in status.get("states") or ():
        mine = unplaced.pop(row["name"], None)
        if mine:
            text = f"retrying: {_describe(mine)}"
            old = row["message"]
            rows.append({**row, "message": f"{old}; {text}" if old else text})
        else:
            rows.append(row)
    if unplaced and rows:  # node or namespace writes: shown on the first state
        first = rows[0]
        text = f"retrying: {_describe([f for fs in unplaced.values() for f in fs])}"
        old = first["message"]
        rows[0] = {**first, "message": f"{old}; {text}" if old else text}
    return {**status, "states": rows}
