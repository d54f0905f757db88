"""Transition Events: found by comparing the previous status with the new one, so they
fire once per transition, never on a recomputation or an operator restart.

Covers state completed, state failed (per node), kernel group added/removed, conflict
found and objects removed. Whole-plan sequences are in ``tests/unit/reconcile/test_plan``.
"""

from __future__ import annotations

from typing import Any

import pytest

from sro.model import desired
from sro.status import events

pytestmark = pytest.mark.unit


def row(name: str, phase: str, failing: dict[str, str] | None = None, total: int = 3) -> dict[str, Any]:
    return {
        "name": name,
        "phase": phase,
        "nodes": {"complete": total if phase == "Complete" else 0, "total": total},
        "message": "",
        "failingNodes": [{"node": n, "reason": r} for n, r in (failing or {}).items()],
    }


def body(
    *rows: dict[str, Any], kernels: list[tuple[str, str]] | None = None, degraded: str = ""
) -> dict[str, Any]:
    status: dict[str, Any] = {"states": list(rows)}
    if kernels is not None:
        status["kernels"] = [{"kernel": k, "os": o, "nodes": 1} for k, o in kernels]
    status["conditions"] = [
        {
            "type": "Degraded",
            "status": "True" if degraded else "False",
            "reason": degraded or "AsExpected",
            "message": "m",
        }
    ]
    return status


def reasons(evs: tuple[events.Event, ...]) -> list[str]:
    return [e.reason for e in evs]


def test_a_state_completing_is_one_normal_event_and_staying_complete_is_none() -> None:
    before = body(row("state-driver", "Progressing"))
    after = body(row("state-driver", "Complete"))
    (event,) = events.transitions(before, after)
    assert (event.type, event.reason, event.message) == (
        "Normal",
        "StateCompleted",
        "state-driver is complete on 3 nodes",
    )
    assert events.transitions(after, after) == ()


def test_a_state_failing_on_a_node_is_one_warning_per_newly_failing_node() -> None:
    one = body(row("v", "Failed", {"n1": "Error (exit code 1)"}))
    two = body(row("v", "Failed", {"n1": "Error (exit code 1)", "n2": "Error (exit code 2)"}))
    assert [(e.type, e.message) for e in events.transitions(body(row("v", "Progressing")), one)] == [
        ("Warning", "v failed on n1: Error (exit code 1)")
    ]
    assert [e.message for e in events.transitions(one, two)] == ["v failed on n2: Error (exit code 2)"]
    assert events.transitions(two, two) == ()


def test_kernel_groups_added_and_removed_are_reported_but_not_on_the_first_status() -> None:
    a, b = ("5.14.0-1", "rhel9.4"), ("5.14.0-2", "rhel9.4")
    assert events.transitions({}, body(kernels=[a])) == ()
    moved = events.transitions(body(kernels=[a]), body(kernels=[b]))
    assert reasons(moved) == ["KernelGroupAdded", "KernelGroupRemoved"]
    assert "5.14.0-2 on rhel9.4 added" in moved[0].message
    assert "5.14.0-1 on rhel9.4 removed" in moved[1].message


def test_a_conflict_is_reported_when_it_appears_only() -> None:
    clean = body()
    conflict = body(degraded="ConflictingNodeSelector")
    assert reasons(events.transitions(clean, conflict)) == ["ConflictFound"]
    assert events.transitions(conflict, conflict) == ()
    assert events.transitions(body(degraded="RecipeInvalid"), body(degraded="RecipeInvalid")) == ()


def test_removed_objects_are_listed_in_one_event() -> None:
    refs = [
        desired.ObjectRef(api_version="apps/v1", kind="DaemonSet", namespace="ns", name=f"driver-{i}")
        for i in range(7)
    ]
    (event,) = events.objects_removed(list(reversed(refs)))
    assert event.reason == "ObjectsRemoved"
    assert event.message.startswith("deleted 7 objects: DaemonSet/ns/driver-0, DaemonSet/ns/driver-1")
    assert event.message.endswith("and 2 more")


def test_objects_removed_leaves_out_what_was_already_gone() -> None:
    refs = [
        desired.ObjectRef(api_version="apps/v1", kind="DaemonSet", namespace="ns", name=f"driver-{i}")
        for i in range(2)
    ]
    (event,) = events.objects_removed(refs, absent={refs[0]})
    assert event.message == "deleted 1 object: DaemonSet/ns/driver-1"
    assert events.objects_removed(refs, absent=set(refs)) == ()
    assert events.objects_removed([]) == ()


def test_an_unchanged_status_produces_no_event_at_all() -> None:
    status = body(
        row("a", "Complete"),
        row("b", "Failed", {"n1": "x"}),
        kernels=[("k", "o")],
        degraded="ConflictingNodeSelector",
    )
    assert events.transitions(status, status) == ()


def test_render_warnings_are_one_warning_event_per_generation() -> None:
    old, new = {"observedGeneration": 1}, {"observedGeneration": 2}
    first = events.render_warnings(old, new, warnings=["a skipped"])
    assert [(e.type, e.reason, e.message) for e in first] == [("Warning", "RenderWarnings", "a skipped")]
    assert events.render_warnings({"observedGeneration": 2}, {"observedGeneration": 2}, warnings=["a"]) == ()
    assert events.render_warnings({}, {"observedGeneration": 1}, warnings=[]) == ()
    many = events.render_warnings({}, {"observedGeneration": 1}, warnings=[str(i) for i in range(7)])
    assert many[0].message == "0; 1; 2; 3; 4 (and 2 more)"
