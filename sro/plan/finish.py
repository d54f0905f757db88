"""The status a reconcile ends with: the plan's, unless something outranks it.

The planner computes the status from the walk of the nodes. The engine knows a few things
the planner does not, and each of them makes the SpecialResource Degraded with its own
reason while the rows (recipe, nodes, kernels, states) still describe the walk:

* a write the API server refused (``ApplyFailed``, with the server's message), or a
  transient failure that persisted past the bound;
* a dependency missing or in a cycle (``DependencyMissing`` / ``DependencyCycle``);
* nodes lost to an earlier SpecialResource of the same recipe (``ConflictingNodeSelector``).

A transient failure still within the bound is not Degraded: it shows in the message of
the state it concerns, and the engine retries with backoff.

Pure. Condition times follow the status actually stored (``previous``), so recomputing an
unchanged world changes nothing and writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sro.plan import conflicts, dependencies, outcomes, planner
from sro.status import events, summary

_FAILURES_SHOWN = 3
_NODES_SHOWN = 5
_RETRY_CAP = 30.0


@dataclass(frozen=True, kw_only=True)
class Transient:
    """A run of transient write failures: since when, how many passes, past the bound or not."""

    since: datetime
    attempts: int
    expired: bool


def degraded(
    base: Mapping[str, Any],
    previous: Mapping[str, Any],
    *,
    reason: str,
    message: str,
    generation: int,
    now: datetime,
) -> dict[str, Any]:
    """Degraded with ``reason``: rows from ``base``, condition times from ``previous``."""
    mixed = {**base, "conditions": list(previous.get("conditions") or ())}
    return summary.status_for_error(mixed, reason=reason, message=message, generation=generation, now=now)


def _describe(failures: Sequence[outcomes.Failure]) -> str:
    shown = "; ".join(f.describe() for f in failures[:_FAILURES_SHOWN])
    more = len(failures) - _FAILURES_SHOWN
    return f"{shown} (and {more} more)" if more > 0 else shown


def finish(
    planned: Mapping[str, Any],
    previous: Mapping[str, Any],
    *,
    conflict: conflicts.ConflictReport,
    deps: dependencies.DependencyReport,
    failures: Sequence[outcomes.Failure],
    transient: Transient | None,
    generation: int,
    now: datetime,
) -> tuple[Mapping[str, Any], float | None]:
    """The status to write and, for transient failures, seconds until the retry."""
    permanent = [f for f in failures if f.permanent]
    passing = [f for f in failures if not f.permanent]

    planned = _with_waiting_nodes(planned, deps)

    def fail(reason: str, message: str) -> dict[str, Any]:
        return degraded(planned, previous, reason=reason, message=message, generation=generation, now=now)

    retry_in = min(2.0 ** min(transient.attempts, 8), _RETRY_CAP) if transient else None
    if permanent:
        return fail("ApplyFailed", _describe(permanent)), retry_in
    if transient is not None and transient.expired:
        since = transient.since.strftime("%H:%M:%SZ")
        return fail("ApplyFailed", f"failing since {since}: {_describe(passing)}"), retry_in
    if not deps.ok:
        return fail(deps.reason, deps.message()), retry_in
    if not conflict.ok:
        return fail("ConflictingNodeSelector", conflict.message()), retry_in
    if passing:
        return _with_retry_messages(planned, passing), retry_in
    return planned, None


def _with_waiting_nodes(status: Mapping[str, Any], deps: dependencies.DependencyReport) -> Mapping[str, Any]:
    """The status with the first unfinished state's row naming the nodes that wait for a
    dependency, and which one: the row is where an administrator looks for a node."""
    if deps.ok or deps.cycle or not deps.waiting:
        return status
    names = sorted(deps.waiting)
    blocking = ", ".join(deps.absent or tuple(sorted(deps.uncovered)))
    more = len(names) - _NODES_SHOWN
    shown = ", ".join(names[:_NODES_SHOWN]) + (f" and {more} more" if more > 0 else "")
    text = f"{shown}: waiting for SpecialResource {blocking}, which is missing or does not select them"
    rows = [dict(r) for r in status.get("states") or ()]
    target = next((r for r in rows if r.get("phase") != "Complete"), rows[0] if rows else None)
    if target is None:
        return status
    old = str(target.get("message") or "")
    target["message"] = f"{text}; {old}" if old else text
    return {**status, "states": rows}


def _with_retry_messages(status: Mapping[str, Any], failures: Sequence[outcomes.Failure]) -> dict[str, Any]:
    """The status with each failing state's row saying what is being retried."""
    by_state: dict[str, list[outcomes.Failure]] = {}
    for failure in failures:
        by_state.setdefault(failure.state, []).append(failure)
    rows = []
    unplaced = dict(by_state)
    for row in status.get("states") or ():
        mine = unplaced.pop(str(row.get("name", "")), None)
        if mine:
            text = f"retrying: {_describe(mine)}"
            old = str(row.get("message") or "")
            rows.append({**row, "message": f"{old}; {text}" if old else text})
        else:
            rows.append(row)
    if unplaced and rows:  # node or namespace writes: shown on the first state
        first = rows[0]
        text = f"retrying: {_describe([f for fs in unplaced.values() for f in fs])}"
        old = str(first.get("message") or "")
        rows[0] = {**first, "message": f"{old}; {text}" if old else text}
    return {**status, "states": rows}


def events_for(
    previous: Mapping[str, Any], status: Mapping[str, Any], planned: planner.Plan
) -> tuple[events.Event, ...]:
    """The plan's Events when its status stands; else the transitions to the final status
    (plus the plan's report of removed objects, which no status comparison can find)."""
    if status is planned.status:
        return planned.events
    removed = tuple(e for e in planned.events if e.reason == events.OBJECTS_REMOVED)
    return (*events.transitions(previous, status), *removed)
