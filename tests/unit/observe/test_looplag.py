"""The event-loop probe: a stall of the loop is measured, counted and, past its bound, logged."""

from __future__ import annotations

import asyncio
import gc
import time

import pytest
from structlog.testing import capture_logs

from sro.observe import gcpause, looplag, metrics

pytestmark = pytest.mark.unit


class Probed:
    """The real registry, plus an event per probe so the test waits on probes, not time."""

    def __init__(self) -> None:
        self.metrics = metrics.Metrics()
        self.lags: list[float] = []
        self.probed = asyncio.Event()

    def loop_lag(self, seconds: float) -> None:
        self.metrics.loop_lag(seconds)
        self.lags.append(seconds)
        self.probed.set()

    def gc_paused(self, *, generation: int, seconds: float) -> None:
        self.metrics.gc_paused(generation=generation, seconds=seconds)

    async def probes(self, count: int) -> None:
        while len(self.lags) < count:
            self.probed.clear()
            await self.probed.wait()


async def test_a_blocked_loop_is_measured_and_a_long_stall_logged() -> None:
    seen = Probed()
    with capture_logs() as logs:
        probe = asyncio.create_task(looplag.watch(metrics=seen, interval=0.01, warn_after=0.15))
        try:
            await seen.probes(3)
            time.sleep(0.3)  # noqa: ASYNC251 - the stall itself: the probe cannot run meanwhile
            await seen.probes(len(seen.lags) + 1)
        finally:
            probe.cancel()
    m = seen.metrics
    assert m.value("sro_event_loop_lag_seconds_count") == len(seen.lags)
    assert max(seen.lags) >= 0.25
    assert m.value("sro_event_loop_lag_seconds_bucket", {"le": "0.25"}) <= len(seen.lags) - 1
    assert m.value("sro_event_loop_lag_seconds_sum") >= 0.25
    stalls = [e["seconds"] for e in logs if e["event"] == "event loop blocked"]
    assert stalls and max(stalls) >= 0.25


async def test_a_loop_that_keeps_up_logs_nothing() -> None:
    seen = Probed()
    with capture_logs() as logs:
        probe = asyncio.create_task(looplag.watch(metrics=seen, interval=0.005, warn_after=1.0))
        try:
            await seen.probes(5)
        finally:
            probe.cancel()
    assert max(seen.lags) < 1.0
    assert not [e for e in logs if e["event"] == "event loop blocked"]


async def test_a_collection_during_a_stall_is_counted_and_named_on_its_line() -> None:
    seen = Probed()
    with capture_logs() as logs, gcpause.Pauses() as pauses:
        probe = asyncio.create_task(
            looplag.watch(metrics=seen, pauses=pauses, interval=0.01, warn_after=0.15)
        )
        try:
            await seen.probes(3)
            time.sleep(0.2)  # noqa: ASYNC251 - a stall beside the collection, past warn_after
            gc.collect()  # the collection, inside the same stall
            await seen.probes(len(seen.lags) + 1)
        finally:
            probe.cancel()
    m = seen.metrics
    assert m.value("sro_gc_pause_seconds_count", {"generation": "2"}) >= 1
    assert m.value("sro_gc_pause_seconds_sum", {"generation": "2"}) > 0
    stalls = [e for e in logs if e["event"] == "event loop blocked"]
    assert stalls and max(e["gc_seconds"] for e in stalls) > 0
    assert 2 in [e["gc_generation"] for e in stalls]


async def test_a_stall_without_a_collection_says_none() -> None:
    seen = Probed()
    with capture_logs() as logs, gcpause.Pauses() as pauses:
        gc.disable()  # no collection can start inside this test's stall
        try:
            probe = asyncio.create_task(
                looplag.watch(metrics=seen, pauses=pauses, interval=0.01, warn_after=0.15)
            )
            try:
                await seen.probes(3)
                pauses.take()  # whatever ran before the stall
                time.sleep(0.3)  # noqa: ASYNC251 - the stall itself
                await seen.probes(len(seen.lags) + 1)
            finally:
                probe.cancel()
        finally:
            gc.enable()
    stalls = [e for e in logs if e["event"] == "event loop blocked"]
    assert stalls and all(e["gc_seconds"] == 0 and e["gc_generation"] is None for e in stalls)
