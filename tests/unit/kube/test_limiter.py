"""Client-side flow control: the rate and the number of requests in flight stay bounded."""

from __future__ import annotations

import asyncio
import time

import pytest

from sro.kube import limiter

pytestmark = pytest.mark.unit


def test_requests_beyond_the_burst_go_out_at_the_rate() -> None:
    async def main() -> tuple[float, list[float]]:
        gate = limiter.RequestLimiter(qps=20, burst=4, max_in_flight=100)
        waits: list[float] = []
        started = time.monotonic()

        async def one() -> None:
            async with gate.slot() as waited:
                waits.append(waited)

        await asyncio.gather(*(one() for _ in range(10)))
        return time.monotonic() - started, waits

    took, waits = asyncio.run(main())
    # 4 at once, then 6 more at 20 per second: the last one 0.3 s after the first.
    assert took >= 0.28
    assert sum(1 for w in waits if w < 0.01) == 4


def test_no_more_than_max_in_flight_requests_at_once() -> None:
    async def main() -> int:
        gate = limiter.RequestLimiter(qps=0, burst=1, max_in_flight=3)
        running = peak = 0

        async def one() -> None:
            nonlocal running, peak
            async with gate.slot():
                running += 1
                peak = max(peak, running)
                await asyncio.sleep(0.01)
                running -= 1

        await asyncio.gather(*(one() for _ in range(20)))
        return peak

    assert asyncio.run(main()) == 3
