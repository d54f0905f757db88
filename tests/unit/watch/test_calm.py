"""When a stream's reader rests: long after a quiet spell, briefly while its events queue
work, never after a burst."""

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


def _busy(clock: _Clock, rested: list[int]) -> calm.Calm:
    return calm.Calm(
        rest=0.25, busy_rest=0.05, quiet_for=10.0, busy_bytes=1000, clock=clock,
        on_rest=lambda: rested.append(1),
    )  # fmt: skip


def test_a_stream_whose_events_queue_work_rests_briefly_and_uncounted() -> None:
    clock = _Clock()
    rested: list[int] = []
    c = _busy(clock, rested)
    assert c.rest(10) == 0.05  # a new stream is not calm yet: it is busy
    c.stirred()
    clock.now += 9.9
    assert c.rest(10) == 0.05
    clock.now += 0.1
    assert c.rest(10) == 0.25  # quiet for the whole spell: the calm rest, counted
    assert rested == [1]
    c.stirred()
    assert c.rest(10) == 0.05
    assert rested == [1], "a busy rest is not a calm one"


def test_a_burst_is_read_at_once_while_busy_too() -> None:
    clock = _Clock()
    rested: list[int] = []
    c = _busy(clock, rested)
    c.stirred()
    assert c.rest(999) == 0.05
    assert c.rest(1000) == 0.0
    assert c.rest(1) == 0.05


def test_a_busy_rest_of_zero_reads_a_busy_stream_at_once_and_keeps_the_calm_rest() -> None:
    clock = _Clock()
    rested: list[int] = []
    c = calm.Calm(rest=0.25, busy_rest=0.0, quiet_for=10.0, clock=clock, on_rest=lambda: rested.append(1))
    c.stirred()
    assert c.rest(1) == 0.0
    clock.now += 10
    assert c.rest(1) == 0.25
    assert rested == [1]


def test_a_stream_with_no_calm_rest_still_rests_while_busy() -> None:
    """The Pod watch: no heartbeats to batch when calm, a converging fleet's pods when busy."""
    clock = _Clock()
    rested: list[int] = []
    c = calm.Calm(rest=0.0, busy_rest=0.05, quiet_for=10.0, clock=clock, on_rest=lambda: rested.append(1))
    assert c.rest(1) == 0.05
    clock.now += 60
    assert c.rest(1) == 0.0
    assert rested == []
