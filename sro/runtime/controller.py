"""Workers: take a key from the queue, reconcile it, act on the outcome.

N workers share one queue; the queue guarantees a key is never reconciled by two of
them at once. Each reconcile runs under a timeout and an exception guard: nothing a
reconcile raises stops a worker, and ``done(key)`` always runs. What happens next is
decided by ``result.decide`` alone. Reconciles are level-triggered: the key is all a
reconcile gets; it reads current state from the caches.

``stop()`` stops handing out keys; ``run()`` returns once in-flight reconciles finish
(the manager bounds that wait with the grace period, then cancels).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

import structlog

from sro import settings as settings_
from sro.observe import logs
from sro.queue import workqueue
from sro.runtime import handlers
from sro.runtime import result as result_

log = structlog.get_logger(__name__)

Reconcile = Callable[[handlers.QueueKey], Awaitable[result_.Result]]


class ControllerMetrics(Protocol):
    def reconciled(self, *, result: str, seconds: float) -> None: ...

    def workers_active(self, delta: int) -> None: ...


class Controller:
    def __init__(
        self,
        *,
        queue: workqueue.WorkQueue[handlers.QueueKey],
        reconcile: Reconcile,
        settings: settings_.ControllerSettings,
        metrics: ControllerMetrics,
    ) -> None:
        self.queue = queue
        self._reconcile = reconcile
        self._settings = settings
        self._metrics = metrics

    async def run(self) -> None:
        """Run the workers until ``stop()``; returns when the last in-flight reconcile is done."""
        async with asyncio.TaskGroup() as group:
            for n in range(self._settings.workers):
                group.create_task(self._worker(), name=f"sro-worker-{n}")

    def stop(self) -> None:
        self.queue.shutdown()

    async def _worker(self) -> None:
        while (key := await self.queue.get()) is not None:
            await self.process(key)
            _stop_if_cancelled()

    async def process(self, key: handlers.QueueKey) -> result_.Outcome:
        """Reconcile one key taken from the queue and act on the outcome."""
        self._metrics.workers_active(1)
        started = time.monotonic()
        cost: float | None = None  # the whole pass, unless it says what it spent computing
        try:
            with logs.bind_reconcile(key):
                answer = await self._guarded(key)
                if isinstance(answer, result_.Result):
                    cost = answer.cost
                outcome = result_.decide(answer)
                self._act(key, outcome)
                if outcome.action is result_.Action.RETRY:
                    log.warning("reconcile failed: will retry", requeues=self.queue.num_requeues(key))
                elif outcome.action is result_.Action.DROP:
                    log.error("reconcile failed for good: not retrying")
            self._metrics.reconciled(result=outcome.label, seconds=time.monotonic() - started)
            return outcome
        finally:
            self.queue.done(key, cost=cost)
            self._metrics.workers_active(-1)

    async def _guarded(self, key: handlers.QueueKey) -> result_.Result | BaseException:
        try:
            async with asyncio.timeout(self._settings.reconcile_timeout):
                return await self._reconcile(key)
        except TimeoutError as exc:
            log.warning("reconcile timed out", timeout=self._settings.reconcile_timeout)
            return exc
        except Exception as exc:  # the guard: a reconcile bug must not kill the worker
            log.warning("reconcile raised", error=f"{type(exc).__name__}: {exc}", exc_info=True)
            return exc

    def _act(self, key: handlers.QueueKey, outcome: result_.Outcome) -> None:
        if outcome.action is result_.Action.RETRY:
            self.queue.add_rate_limited(key)
            return
        self.queue.forget(key)
        if outcome.action is result_.Action.REQUEUE_AFTER:
            self.queue.add_after(key, outcome.delay)


def _stop_if_cancelled() -> None:
    """Raise ``CancelledError`` if this task was cancelled and nothing raised it: a
    cancellation that lands while a TaskGroup inside the reconcile is failing comes out as
    the group's error (Python 3.11's TaskGroup gives errors priority), which the guard
    takes for a failed reconcile. That is how a leader whose writes the lease fence refused
    at the very moment it lost the lease kept waiting on the queue instead of exiting."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
