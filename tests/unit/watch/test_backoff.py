"""Retry schedules of the reflector (sro.watch.backoff): failures and repeated 410 Gone."""

from __future__ import annotations

import random

import pytest

from sro.watch import backoff

pytestmark = pytest.mark.unit


class FixedRandom(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


def test_the_first_410_relists_at_once_then_each_waits_twice_as_long_up_to_the_cap() -> None:
    b = backoff.RelistBackoff(initial=0.8, cap=30.0, jitter=0.5, rng=FixedRandom(0.0))
    delays = [b.next() for _ in range(9)]
    assert delays == [0.0, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]


def test_jitter_takes_off_at_most_its_fraction_and_never_exceeds_the_cap() -> None:
    low = backoff.RelistBackoff(initial=1.0, cap=10.0, jitter=0.5, rng=FixedRandom(0.999999))
    assert [round(low.next(), 3) for _ in range(3)] == [0.0, 0.5, 1.0]
    rng = random.Random(3)
    b = backoff.RelistBackoff(initial=0.8, cap=30.0, jitter=0.5, rng=rng)
    b.next()
    delays = [b.next() for _ in range(200)]
    assert all(0 < d <= 30.0 for d in delays)
    capped = delays[10:]
    assert min(capped) >= 15.0 and max(capped) <= 30.0
    assert len({round(d, 6) for d in capped}) > 100, "jittered, not all alike"


def test_a_healthy_watch_starts_the_count_again() -> None:
    b = backoff.RelistBackoff(initial=0.8, cap=30.0, jitter=0.0)
    assert [b.next() for _ in range(4)] == [0.0, 0.8, 1.6, 3.2]
    b.healthy()
    assert b.streak == 0
    assert [b.next() for _ in range(3)] == [0.0, 0.8, 1.6]


def test_a_very_long_streak_stays_at_the_cap() -> None:
    b = backoff.RelistBackoff(initial=0.8, cap=30.0, jitter=0.0)
    for _ in range(5000):
        delay = b.next()
    assert delay == 30.0


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t


def test_failure_backoff_doubles_with_jitter_and_resets_after_a_healthy_stretch() -> None:
    clock = FakeClock()
    b = backoff.Backoff(initial=0.8, cap=30.0, jitter=0.0, reset_after=120.0, clock=clock)
    assert [b.next() for _ in range(8)] == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    clock.t = 121.0
    b.healthy()
    assert b.next() == 0.8
