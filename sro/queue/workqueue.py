"""The work queue between event handlers and workers, with client-go's semantics.

Properties (each has a unit test named for it and a rule in the property test):

* **Fair**: keys are handed out in the order they were added.
* **Stingy**: a key added many times before a worker takes it is handed out once
  (bursts collapse).
* **Exclusive**: a key is never held by two workers at once; adding a key that is
  being processed only marks it dirty, and ``done`` re-queues it, so an add during
  processing leads to exactly one more pass.
* **Delayed**: ``add_after`` parks a key until its ready time; the earliest ready
  time wins. ``add_rate_limited`` uses the per-key limiter; ``forget`` resets it.
* **Paced**: with ``pace`` above 1, a key whose pass cost *d* seconds rests
  ``(pace - 1) * d`` (at most ``rest_cap``, and at most ``rest_ratio`` times the pass's
  whole duration when that is set) before its next pass starts, if it was added at least
  ``busy`` times while that pass ran; adds during the rest collapse into that one pass.
  A pass's cost is what ``done`` is told (the seconds it spent computing, not waiting on
  answers), else its whole duration. A key added after a quiet spell starts
  at once, and so does one whose pass saw only a few adds (one node's step: a pod ready,
  a label set), so only a key kept busy by a flood of news is slowed, and what its
  passes cost takes at most ``1 / pace`` of the time.
* **Shutdown**: after ``shutdown`` no key is accepted and ``get`` returns None;
  ``shutdown(drain=True)`` waits until every key being processed is ``done``.
  Keys queued but not started are dropped: reconciles are level-triggered, and the
  next process lists everything again.

The synchronous core (``add``, ``try_get``, ``done``) is pure; ``get`` only adds
waiting. The clock is injected; metrics go through ``QueueMetrics``.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from sro.queue import clock as clocks
from sro.queue import delaying, ratelimit

K = TypeVar("K", bound=Hashable)

# Upper bound on one sleep of ``get``: guards against a lost wake-up, as client-go's
# 10 s maxWait does. Waking more often than needed costs nothing but a loop turn.
MAX_WAIT = 10.0


class QueueMetrics(Protocol):
    def queue_added(self) -> None: ...

    def queue_depth(self, depth: int) -> None: ...

    def queue_latency(self, seconds: float) -> None: ...

    def queue_retried(self) -> None: ...

    def queue_work_started(self, key: Hashable) -> None: ...

    def queue_work_done(self, key: Hashable, seconds: float) -> None: ...


class NoMetrics:
    def queue_added(self) -> None:
        return None

    def queue_depth(self, depth: int) -> None:
        return None

    def queue_latency(self, seconds: float) -> None:
        return None

    def queue_retried(self) -> None:
        return None

    def queue_work_started(self, key: Hashable) -> None:
        return None

    def queue_work_done(self, key: Hashable, seconds: float) -> None:
        return None


class WorkQueue(Generic[K]):
    def __init__(
        self,
        *,
        clock: clocks.Clock | None = None,
        limiter: ratelimit.RateLimiter | None = None,
        metrics: QueueMetrics | None = None,
        pace: float = 1.0,
        rest_cap: float = 0.0,
        rest_ratio: float = 0.0,
        busy: int = 0,
    ) -> None:
        """``pace``, ``rest_cap``, ``rest_ratio`` and ``busy``: see **Paced** (pace 1.0, the
        default: back to back; rest_ratio 0: no bound by the pass's duration; busy 0:
        every pass rests)."""
        if pace < 1.0 or rest_cap < 0.0 or rest_ratio < 0.0 or busy < 0:
            raise ValueError(
                "pace must be at least 1, rest_cap, rest_ratio and busy not negative "
                f"(got {pace}, {rest_cap}, {rest_ratio}, {busy})"
            )
        self._pace = pace
        self._rest_cap = rest_cap
        self._rest_ratio = rest_ratio
        self._busy = busy
        self._clock = clock or clocks.MonotonicClock()
        self._limiter = limiter or ratelimit.default(clock=self._clock)
        self._metrics: QueueMetrics = metrics or NoMetrics()
        # Invariants: every key in _fifo is in _dirty and not in _processing; a key in
        # _dirty and _processing is not in _fifo (done() will enqueue it).
        self._fifo: collections.deque[K] = collections.deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._added_at: dict[K, float] = {}  # for the latency metric
        self._started_at: dict[K, float] = {}  # for the work duration metric and the pace
        self._resting: dict[K, float] = {}  # key -> when its rest after its last pass ends
        self._adds_during: dict[K, int] = {}  # key -> adds while its pass runs (Paced)
        self._waiting: delaying.DelayHeap[K] = delaying.DelayHeap()
        self._shutting_down = False
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    # -- the pure core -------------------------------------------------------

    def add(self, key: K) -> None:
        if self._shutting_down:
            return
        self._metrics.queue_added()
        if key in self._processing:
            self._adds_during[key] = self._adds_during.get(key, 0) + 1
        self._enqueue(key)

    def _enqueue(self, key: K) -> None:
        if key in self._dirty:
            return
        if key not in self._processing and self._rests(key):
            return
        self._dirty.add(key)
        self._added_at.setdefault(key, self._clock.now())
        if key in self._processing:
            return
        self._fifo.append(key)
        self._changed()

    def _rests(self, key: K) -> bool:
        """Whether ``key`` is resting after its last pass; if so it waits for the rest's end
        (``promote_ready`` adds it then), keeping the time of its first add for the metric."""
        until = self._resting.get(key)
        if until is None:
            return False
        now = self._clock.now()
        if now >= until:
            del self._resting[key]
            return False
        self._added_at.setdefault(key, now)
        self._waiting.push(key, until)
        self._wakeup.set()
        return True

    def add_after(self, key: K, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        self._waiting.push(key, self._clock.now() + delay)
        self._wakeup.set()

    def add_rate_limited(self, key: K) -> None:
        self._metrics.queue_retried()
        self.add_after(key, self._limiter.when(key))

    def forget(self, key: K) -> None:
        self._limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return self._limiter.num_requeues(key)

    def try_get(self) -> K | None:
        """The next ready key, now marked as processing; None if none is ready."""
        self.promote_ready()
        if not self._fifo:
            return None
        key = self._fifo.popleft()
        self._dirty.discard(key)
        self._processing.add(key)
        self._idle.clear()
        now = self._clock.now()
        added = self._added_at.pop(key, None)
        if added is not None:
            self._metrics.queue_latency(max(0.0, now - added))
        self._started_at[key] = now
        self._metrics.queue_work_started(key)
        self._metrics.queue_depth(len(self._fifo))
        return key

    def done(self, key: K, *, cost: float | None = None) -> None:
        """``key``'s pass is over; ``cost``: the seconds of it the pace counts (see
        **Paced**; None: the whole pass)."""
        self._processing.discard(key)
        started = self._started_at.pop(key, None)
        adds = self._adds_during.pop(key, 0)
        now = self._clock.now()
        if started is not None:
            took = max(0.0, now - started)
            self._metrics.queue_work_done(key, took)
            if adds >= self._busy:
                self._rest(key, now=now, took=took, cost=took if cost is None else max(0.0, cost))
        if key in self._dirty and not self._shutting_down:
            self._dirty.discard(key)
            self._enqueue(key)  # at once, or at the end of its rest
        if not self._processing:
            self._idle.set()

    def _rest(self, key: K, *, now: float, took: float, cost: float) -> None:
        """Start ``key``'s rest after a pass that took ``took`` seconds and cost ``cost``
        (see **Paced**)."""
        rest = min((self._pace - 1.0) * cost, self._rest_cap)
        if self._rest_ratio > 0.0:
            rest = min(rest, self._rest_ratio * took)
        if rest <= 0.0:
            return
        if len(self._resting) > 1024:  # keys that were never added again: forget ended rests
            self._resting = {k: t for k, t in self._resting.items() if t > now}
        self._resting[key] = now + rest

    def promote_ready(self) -> None:
        """Move every delayed key whose time has come into the queue."""
        for key in self._waiting.pop_ready(self._clock.now()):
            self.add(key)

    # -- waiting --------------------------------------------------------------

    async def get(self) -> K | None:
        """Wait for the next key; None once the queue is shut down."""
        while True:
            if self._shutting_down:
                return None
            key = self.try_get()
            if key is not None:
                return key
            self._wakeup.clear()
            wait = MAX_WAIT
            next_ready = self._waiting.next_ready()
            if next_ready is not None:
                wait = min(wait, max(0.0, next_ready - self._clock.now()))
            try:
                async with asyncio.timeout(wait):
                    await self._wakeup.wait()
            except TimeoutError:
                pass

    def shutdown(self) -> None:
        """Accept nothing more; waiting ``get`` calls return None."""
        self._shutting_down = True
        self._fifo.clear()
        self._dirty.clear()
        self._waiting.clear()
        self._added_at.clear()
        self._resting.clear()
        self._adds_during.clear()
        self._wakeup.set()

    async def drain(self) -> None:
        """Wait until every key being processed is done (call after ``shutdown``)."""
        await self._idle.wait()

    async def shutdown_with_drain(self) -> None:
        self.shutdown()
        await self.drain()

    # -- introspection --------------------------------------------------------

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def __len__(self) -> int:
        return len(self._fifo)

    @property
    def processing(self) -> frozenset[K]:
        return frozenset(self._processing)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def ready_at(self, key: K) -> float | None:
        return self._waiting.ready_at(key)

    def _changed(self) -> None:
        self._metrics.queue_depth(len(self._fifo))
        self._wakeup.set()
