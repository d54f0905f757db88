"""Per-key retry delays: when should a failing key be tried again?

A rate limiter answers ``when(key)`` (the delay before the next attempt, counting
this failure), ``forget(key)`` (the key succeeded: start over) and
``num_requeues(key)``. They are small values that compose: ``MaxOf`` takes the
largest delay of several, as client-go's default combines per-key exponential
backoff with an overall token bucket.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from sro.queue import clock as clocks


class RateLimiter(Protocol):
    def when(self, key: Hashable) -> float: ...

    def forget(self, key: Hashable) -> None: ...

    def num_requeues(self, key: Hashable) -> int: ...


class ExponentialBackoff:
    """``base * 2**failures``, capped at ``cap``: 5 ms, 10 ms, 20 ms, ... per key.

    The exponent is bounded before it is used, so a key failing forever never
    overflows a float.
    """

    def __init__(self, *, base: float = 0.005, cap: float = 300.0) -> None:
        if base <= 0 or cap < base:
            raise ValueError("need 0 < base <= cap")
        self.base = base
        self.cap = cap
        self._failures: dict[Hashable, int] = {}

    def when(self, key: Hashable) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        if failures >= 64:
            return self.cap
        return float(min(self.base * (2**failures), self.cap))

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: Hashable) -> int:
        return self._failures.get(key, 0)


class TokenBucket:
    """An overall limit of ``rate`` retries per second with a burst of ``burst``.

    Not per key: it protects the API server when many keys fail at once. Each
    ``when`` reserves a token and returns how long until that token exists.
    """

    def __init__(self, *, rate: float = 10.0, burst: int = 100, clock: clocks.Clock | None = None) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("need rate > 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        self._clock = clock or clocks.MonotonicClock()
        self._tokens = float(burst)
        self._last = self._clock.now()

    def when(self, key: Hashable) -> float:
        now = self._clock.now()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate

    def forget(self, key: Hashable) -> None:
        return None

    def num_requeues(self, key: Hashable) -> int:
        return 0


class MaxOf:
    """The largest delay any of the limiters asks for."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOf needs at least one limiter")
        self._limiters = limiters

    def when(self, key: Hashable) -> float:
        return max(limiter.when(key) for limiter in self._limiters)

    def forget(self, key: Hashable) -> None:
        for limiter in self._limiters:
            limiter.forget(key)

    def num_requeues(self, key: Hashable) -> int:
        return max(limiter.num_requeues(key) for limiter in self._limiters)


def default(*, base: float = 0.005, cap: float = 300.0, clock: clocks.Clock | None = None) -> RateLimiter:
    """Per-key exponential backoff combined with a 10 qps / burst 100 bucket."""
    return MaxOf(ExponentialBackoff(base=base, cap=cap), TokenBucket(clock=clock))
