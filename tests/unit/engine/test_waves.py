"""Ordered waves of concurrent writes (``sro.engine.waves``).

Covers: at most ``limit`` run at once, and the limit is reached; every item runs; a wave
starts only when the one before it is done; an exception that must end the reconcile
(``errors.NotLeader``) cancels the rest of its wave, is raised as itself, and leaves no
coroutine un-awaited (warnings are errors in this suite).
"""

from __future__ import annotations

import asyncio

import pytest

from sro import errors
from sro.engine import waves

pytestmark = pytest.mark.unit


async def test_at_most_limit_run_at_once_and_every_item_runs() -> None:
    running = peak = 0
    done: list[int] = []

    async def work(i: int) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0)  # let the others start: the gate alone bounds them
        await asyncio.sleep(0)
        running -= 1
        done.append(i)

    await waves.bounded(range(50), work, limit=7)
    assert peak == 7
    assert sorted(done) == list(range(50))


async def test_a_wave_starts_only_when_the_one_before_is_done() -> None:
    log: list[tuple[str, int]] = []

    async def work(item: tuple[int, int]) -> None:
        rank, _ = item
        log.append(("start", rank))
        await asyncio.sleep(0)
        log.append(("end", rank))

    items = [(0, i) for i in range(5)] + [(1, i) for i in range(5)] + [(2, i) for i in range(3)]
    await waves.in_waves(items, wave=lambda item: item[0], run=work, limit=3)
    ranks_started = [rank for what, rank in log if what == "start"]
    assert ranks_started == sorted(ranks_started)
    last_end_of = {
        rank: max(i for i, (what, r) in enumerate(log) if what == "end" and r == rank) for rank in (0, 1)
    }
    first_start_of = {
        rank: min(i for i, (what, r) in enumerate(log) if what == "start" and r == rank) for rank in (1, 2)
    }
    assert last_end_of[0] < first_start_of[1] and last_end_of[1] < first_start_of[2]


async def test_not_leader_cancels_the_rest_of_the_wave_and_is_raised_as_itself() -> None:
    finished: list[int] = []
    started: list[int] = []

    async def work(i: int) -> None:
        started.append(i)
        if i == 3:
            raise errors.NotLeader("fenced")
        await asyncio.sleep(0.05)
        finished.append(i)

    with pytest.raises(errors.NotLeader, match="fenced"):
        await waves.in_waves(range(40), wave=lambda i: 0, run=work, limit=4)
    assert 3 in started and len(started) < 40, "the wave stopped taking new items"
    assert finished == [], "the writes in flight were cancelled"
