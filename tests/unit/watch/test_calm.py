"""When a calm stream's reader rests: only after a quiet spell, never after a burst."""

from __future__ import annotations

import pytest

from sro.watch import calm

pytestmark = pytest.mark.unit


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _calm(clock: _Clock, rested: list[int]) -> calm.Calm:
    return calm.Calm(
        rest=0.25, quiet_for=10.0, busy_bytes=1000, clock=clock, on_rest=lambda: rested.append(1)
    )


def test_a_new_stream_reads_at_once_until_it_has_been_quiet_for_the_whole_spell() -> None:
    clock = _Clock()
    rested: list[int] = []
    c = _calm(clock, rested)
    assert c.rest(10) == 0.0
    clock.now += 9.9
    assert c.rest(10) == 0.0
    clock.now += 0.1
    assert c.rest(10) == 0.25
    assert len(rested) == 1


def test_an_event_that_queues_work_ends_the_calm_for_another_spell() -> None:
    clock = _Clock()
    rested: list[int] = []
    c = _calm(clock, rested)
    clock.now += 60
    assert c.rest(10) == 0.25
    c.stirred()
    assert c.rest(10) == 0.0
    clock.now += 9
    assert c.rest(10) == 0.0
    clock.now += 1
    assert c.rest(10) == 0.25
    assert len(rested) == 2


def test_a_burst_is_read_at_once_even_when_calm() -> None:
    clock = _Clock()
    rested: list[int] = []
    c = _calm(clock, rested)
    clock.now += 60
    assert c.rest(999) == 0.25
    assert c.rest(1000) == 0.0
    assert c.rest(5000) == 0.0
    assert c.rest(1) == 0.25
    assert len(rested) == 2


def test_a_rest_of_zero_never_rests() -> None:
    clock = _Clock()
    rested: list[int] = []
    c = calm.Calm(rest=0.0, quiet_for=0.0, clock=clock, on_rest=lambda: rested.append(1))
    clock.now += 60
    assert c.rest(1) == 0.0
    assert rested == []
