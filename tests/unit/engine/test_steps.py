"""A pass's stopwatch: each step's time, and what of it the queue's pace counts."""

import pytest

from sro.engine import steps

pytestmark = pytest.mark.unit


def test_computing_is_read_render_and_plan_not_the_writes_or_the_status() -> None:
    noted: list[tuple[str, float]] = []
    laps = steps.Laps(lambda step, seconds: noted.append((step, seconds)))
    for step in ("read", "render", "plan", "execute", "finish"):
        laps.lap(step)
    assert [step for step, _ in noted] == ["read", "render", "plan", "execute", "finish"]
    laps.seconds.update({"read": 0.01, "render": 0.02, "plan": 0.2, "execute": 4.0, "finish": 0.5})
    assert laps.computing() == pytest.approx(0.23)


def test_a_pass_that_stopped_before_planning_computed_only_what_it_reached() -> None:
    laps = steps.Laps()
    laps.lap("read")
    laps.seconds["read"] = 0.05
    assert laps.computing() == pytest.approx(0.05)
