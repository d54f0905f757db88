"""How long the event loop was kept from running: the one figure behind several symptoms.

One loop reads every watch stream, renews the Lease and serves the probes. While
something holds it (a long synchronous step, or the planner's thread holding the GIL
through a C call), watch lines pile up in the socket until the API server gives up on
the watcher and closes it, the Lease may go unrenewed, and ``/healthz`` answers late.
Each of those shows up elsewhere as its own symptom; this measures the cause: a task
that sleeps a fixed interval and records how much later than asked it woke. With a
``gcpause.Pauses`` installed, each probe also takes the garbage collections of its
interval: counted by generation, and added up on a stall's log line (``gc_seconds``, and
``gc_generation``, the oldest generation collected), so a stall that was a collection says so.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

import structlog

from sro.observe import gcpause

log = structlog.get_logger(__name__)

INTERVAL = 0.25
"""How often the loop is probed: often enough to catch a stall of a few hundred ms that
costs a watch, rare enough to cost nothing (four wake-ups a second)."""
WARN_AFTER = 1.0
"""A stall this long is logged as well as counted: at a converging fleet's event rate it
is thousands of watch lines waiting, and a tenth of a Lease's renew deadline."""


class LagMetrics(Protocol):
    def loop_lag(self, seconds: float) -> None: ...

    def gc_paused(self, *, generation: int, seconds: float) -> None: ...


async def watch(
    *,
    metrics: LagMetrics,
    pauses: gcpause.Pauses | None = None,
    interval: float = INTERVAL,
    warn_after: float = WARN_AFTER,
) -> None:
    """Probe the running loop until cancelled."""
    loop = asyncio.get_running_loop()
    while True:
        asked = loop.time() + interval
        await asyncio.sleep(interval)
        lag = max(0.0, loop.time() - asked)
        metrics.loop_lag(lag)
        collected = pauses.take() if pauses is not None else []
        for pause in collected:
            metrics.gc_paused(generation=pause.generation, seconds=pause.seconds)
        if lag >= warn_after:
            held = sum(p.seconds for p in collected)
            oldest = max((p.generation for p in collected), default=None)
            log.warning(
                "event loop blocked", seconds=round(lag, 3), gc_seconds=round(held, 3), gc_generation=oldest
            )
