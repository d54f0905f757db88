"""Client-side flow control: requests at the rate the API server takes them.

A reconcile at a thousand nodes holds hundreds of independent writes, and several parts
of it run at once (``sro.engine.execute``), so without a bound of its own the process
could put far more requests in flight than a small API server serves. Like client-go's
``flowcontrol`` (QPS and burst) and controller-runtime's ``--kube-api-qps``/``-burst``,
every request takes a token from a bucket refilled at ``qps`` per second (``burst``
deep) and one of ``max_in_flight`` slots. Watches are not limited: each holds its
connection for minutes, and their number is fixed by the kinds watched.

The wait is counted (``rest_client_rate_limiter_duration_seconds``), so a limit set too
low shows as time spent waiting here, not as a slow API server.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sro.queue import ratelimit


class RequestLimiter:
    """A token bucket (``qps`` per second, ``burst`` deep; ``qps`` 0: no rate limit) and
    at most ``max_in_flight`` requests at once."""

    def __init__(self, *, qps: float, burst: int, max_in_flight: int) -> None:
        self._bucket = ratelimit.TokenBucket(rate=qps, burst=max(1, burst)) if qps > 0 else None
        self._gate = asyncio.Semaphore(max(1, max_in_flight))

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[float]:
        """Wait for a token and a free slot; yields the seconds waited, holds the slot."""
        started = time.monotonic()
        if self._bucket is not None:
            delay = self._bucket.when(None)  # reserves a token, possibly one still to come
            if delay > 0:
                await asyncio.sleep(delay)
        async with self._gate:
            yield time.monotonic() - started
