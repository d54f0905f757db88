"""The SpecialResource status body (contract section 1), built from a walk or for an error.

Every builder returns the whole ``status`` as plain JSON-ready values, deterministic for a
given input, so ``status_changed`` can tell the writer to skip a write that would change
nothing. The phase word (``Ready``, ``Progressing``, ``Degraded``, ``NoNodes``, ``Unmanaged``,
``Removed``) leads the one-line ``state`` and is repeated in ``phase`` for the STATE
printer column; ``ready`` is ``complete/selected`` for the READY column.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypedDict, cast

from sro.model import crd_limits, desired, progress
from sro.status import conditions, rows
from sro.status.body import (
    KernelRow,
    NodeTotals,
    PreflightRow,
    RecipeSource,
    StateRow,
    StatusBody,
    UpgradeStatus,
)

# The CRD's bounds (maxItems, maxLength): a longer value would make the API server refuse the write.
_KEEP_ON_ERROR = ("recipe", "nodes", "kernels", "states", "preflight", "upgrade")
"""What an error keeps: the rollout's row too (it is read back for its Events: dropped for a
pass, a rolled-back rollout would report its rollback again when it came back)."""


class _Rest(TypedDict, total=False):
    """The optional part of a status, beside phase and conditions."""

    recipe: RecipeSource
    nodes: NodeTotals
    kernels: list[KernelRow]
    states: list[StateRow]
    preflight: list[PreflightRow]
    upgrade: UpgradeStatus


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _body(
    *,
    generation: int,
    phase: str,
    line: str,
    ready: str,
    wanted: Sequence[conditions.Condition],
    previous: Mapping[str, Any],
    now: datetime,
    rest: _Rest,
) -> StatusBody:
    body: StatusBody = {
        "observedGeneration": generation,
        "state": rows.clip(f"{phase}: {line}", crd_limits.STATE_LINE_MAX),
        "phase": phase,
        "ready": ready,
        "conditions": conditions.merge(
            previous.get("conditions") or (), wanted, generation=generation, now=now
        ),
    }
    if "recipe" in rest:
        body["recipe"] = rest["recipe"]
    if "nodes" in rest:
        body["nodes"] = rest["nodes"]
    if "kernels" in rest:
        body["kernels"] = rest["kernels"]
    if "states" in rest:
        body["states"] = rest["states"]
    if "preflight" in rest:
        body["preflight"] = rest["preflight"]
    if "upgrade" in rest:
        body["upgrade"] = rest["upgrade"]
    return body


def _kept(base: Mapping[str, Any]) -> _Rest:
    """The rows of a status that an error or Unmanaged keeps as they are (``base`` may be
    the stored status, so its fields are taken as written)."""
    return cast(_Rest, {k: base[k] for k in _KEEP_ON_ERROR if k in base})


def status_from_walk(
    wanted: desired.DesiredState,
    walked: progress.Walk,
    *,
    unlabelled: frozenset[str] = frozenset(),
    previous: Mapping[str, Any],
    generation: int,
    recipe_source: str,
    now: datetime,
) -> StatusBody:
    """The status of a SpecialResource whose nodes were walked (at least one node).
    ``unlabelled``: nodes whose ``complete`` label a later pass writes (more node changes
    than a pass carries): not counted complete before they show it."""
    state_rows = [rows.state_row(s.name, walked) for s in wanted.states]  # recipe order, as the CRD says
    selected = len(walked.nodes)
    waiting = sum(1 for n in unlabelled if n in walked.nodes and walked.all_complete(n))
    complete = walked.complete_nodes() - waiting
    counts = [walked.phase_counts(s) for s in walked.order]  # the nodes are read for a failure only
    failed = (
        sorted(
            (node, state, ns.reason)
            for node, states in walked.nodes.items()
            for state, ns in states.items()
            if ns.phase is progress.Phase.FAILED
        )
        if any(c.get(progress.Phase.FAILED) for c in counts)
        else []
    )
    progressing = any(c.get(progress.Phase.PROGRESSING) for c in counts)
    if failed:
        nodes = sorted({node for node, _, _ in failed})
        node, state, reason = failed[0]
        more = f", and {rows.plural(len(nodes) - 1, 'more node')}" if len(nodes) > 1 else ""
        phase, line = "Degraded", f"StateFailed on {rows.plural(len(nodes), 'node')} ({node}: {reason}{more})"
        detail = f"{state} failed on {node}: {reason}{more}"
        ready = (False, conditions.STATE_FAILED, detail)
        degraded = (True, conditions.STATE_FAILED, detail)
    elif complete == selected:
        phase, line = "Ready", f"{complete}/{selected} nodes"
        ready = (True, conditions.ALL_STATES_COMPLETE, f"every state is complete on {line}")
        degraded = (False, conditions.AS_EXPECTED, "")
    else:
        by_name = {r["name"]: r for r in state_rows}
        first = next((s for s in walked.order if by_name[s]["phase"] != str(progress.Phase.COMPLETE)), None)
        if first is None:  # every state done everywhere: only labels are left to write
            phase, line = "Progressing", f"labelling {rows.plural(waiting, 'node')} complete"
        else:
            row = by_name[first]  # the earliest unfinished state in walking order
            phase, line = "Progressing", f"{row['name']} {row['nodes']['complete']}/{selected} nodes"
        ready = (False, conditions.STATE_PROGRESSING, f"{complete}/{selected} nodes complete; {line}")
        degraded = (False, conditions.AS_EXPECTED, "")
        progressing = progressing or first is None
    if progressing:
        moving = (True, conditions.STATE_PROGRESSING, f"{complete}/{selected} nodes complete")
    else:
        moving = (False, ready[1], "")
    return _body(
        generation=generation,
        phase=phase,
        line=line,
        ready=f"{complete}/{selected}",
        wanted=conditions.triple(ready=ready, progressing=moving, degraded=degraded),
        previous=previous,
        now=now,
        rest={
            "recipe": {"name": wanted.recipe, "source": recipe_source},
            "nodes": {"selected": selected, "complete": complete},
            "kernels": rows.kernel_rows(wanted),
            "states": state_rows,
        },
    )


def status_no_nodes(
    previous: Mapping[str, Any],
    *,
    wanted: desired.DesiredState,
    generation: int,
    recipe_source: str,
    now: datetime,
) -> StatusBody:
    """No node matches the selector: nothing to do, and Ready says why."""
    message = "no node matches the node selector"
    return _body(
        generation=generation,
        phase="NoNodes",
        line=message,
        ready="0/0",
        wanted=conditions.triple(
            ready=(False, conditions.NO_MATCHING_NODES, message),
            progressing=(False, conditions.NO_MATCHING_NODES, ""),
            degraded=(False, conditions.AS_EXPECTED, ""),
        ),
        previous=previous,
        now=now,
        rest={
            "recipe": {"name": wanted.recipe, "source": recipe_source},
            "nodes": {"selected": 0, "complete": 0},
            "kernels": [],
            "states": [
                {
                    "name": s,
                    "phase": str(progress.Phase.PENDING),
                    "nodes": {"complete": 0, "total": 0},
                    "message": "",
                    "failingNodes": [],
                }
                for s in (spec.name for spec in wanted.states)
            ],
        },
    )


@dataclass(frozen=True, kw_only=True)
class Problem:
    """A Degraded reason found outside the walk (``conditions.ERROR_REASONS``) and its message."""

    reason: str
    message: str

    def __post_init__(self) -> None:
        if self.reason not in conditions.ERROR_REASONS:
            raise ValueError(f"{self.reason!r} is not a Degraded reason")


def status_for_error(
    previous: Mapping[str, Any],
    *,
    reason: str,
    message: str,
    generation: int,
    now: datetime,
    current: Mapping[str, Any] | None = None,
) -> StatusBody:
    """Degraded with ``reason`` (one of ``conditions.ERROR_REASONS``); Ready False with it.

    ``current`` is this pass's status from the walk when the problem does not stop the
    walk (a conflict on some nodes, a missing dependency, a failed apply of one state):
    its rows and its Progressing condition are kept. Without it, nothing moves, and the
    rows of ``previous`` are kept: they still describe what is on the nodes. Conditions
    are always merged against ``previous``, so transition times survive.
    """
    problem = Problem(reason=reason, message=_one_line(message))
    base = current if current is not None else previous
    moving = conditions.find(base.get("conditions") or (), conditions.PROGRESSING) if current else None
    if moving is not None and moving.get("status") == "True":
        progressing = (True, str(moving.get("reason", "")), str(moving.get("message", "")))
    else:
        progressing = (False, problem.reason, "")
    return _body(
        generation=generation,
        phase="Degraded",
        line=f"{problem.reason}: {problem.message}",
        ready=str(base.get("ready", "0/0")),
        wanted=conditions.triple(
            ready=(False, problem.reason, problem.message),
            progressing=progressing,
            degraded=(True, problem.reason, problem.message),
        ),
        previous=previous,
        now=now,
        rest=_kept(base),
    )


def status_building(
    current: Mapping[str, Any], previous: Mapping[str, Any], *, message: str, generation: int, now: datetime
) -> StatusBody:
    """``current`` (this pass's status) while an image is built in the cluster: Progressing
    with reason ``Building``; a Degraded status stays as it is (it needs a look first)."""
    if current.get("phase") == "Degraded":
        return cast(StatusBody, dict(current))
    line = _one_line(message)
    return _body(
        generation=generation,
        phase="Progressing",
        line=f"{conditions.BUILDING}: {line}",
        ready=str(current.get("ready", "0/0")),
        wanted=conditions.triple(
            ready=(False, conditions.BUILDING, line),
            progressing=(True, conditions.BUILDING, line),
            degraded=(False, conditions.AS_EXPECTED, ""),
        ),
        previous=previous,
        now=now,
        rest=_kept(current),
    )


def degraded(
    base: Mapping[str, Any],
    previous: Mapping[str, Any],
    *,
    reason: str,
    message: str,
    generation: int,
    now: datetime,
) -> StatusBody:
    """Degraded with ``reason``, nothing moving: rows from ``base`` (this pass's status, or
    the stored one when nothing was computed), condition times from ``previous``."""
    mixed = {**base, "conditions": list(previous.get("conditions") or ())}
    return status_for_error(mixed, reason=reason, message=message, generation=generation, now=now)


def status_for_management(
    previous: Mapping[str, Any],
    *,
    state: Literal["Unmanaged", "Removed"],
    generation: int,
    now: datetime,
    remaining: int = 0,
) -> StatusBody:
    """``managementState`` Unmanaged (rows kept, nothing changes) or Removed (``remaining``
    objects and nodes still to clean up; rows dropped)."""
    if state == "Unmanaged":
        line = "sro changes nothing for this SpecialResource"
        rest = _kept(previous)
        ready = str(previous.get("ready", "0/0"))
    else:
        line = f"removing {rows.plural(remaining, 'item')}" if remaining else "everything sro made is deleted"
        rest = {"nodes": {"selected": 0, "complete": 0}, "kernels": [], "states": []}
        if "recipe" in previous:
            rest["recipe"] = previous["recipe"]
        ready = "0/0"
    return _body(
        generation=generation,
        phase=state,
        line=line,
        ready=ready,
        wanted=conditions.triple(
            ready=(False, state, line),
            progressing=(False, state, ""),
            degraded=(False, conditions.AS_EXPECTED, ""),
        ),
        previous=previous,
        now=now,
        rest=rest,
    )


def _canonical(status: Mapping[str, Any]) -> str:
    return json.dumps(status, sort_keys=True, separators=(",", ":"), default=str)


def fingerprint(status: Mapping[str, Any]) -> str:
    """A digest of ``status`` that ignores key order: what names the transition a written
    status records (``sro.status.events.name``). Statuses carry their conditions'
    transition times, so a later transition to the same phase has another fingerprint."""
    return hashlib.sha256(_canonical(status).encode()).hexdigest()[:32]


def status_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """Whether writing ``new`` over ``old`` changes anything; only key order is ignored."""
    return _canonical(old or {}) != _canonical(new)
