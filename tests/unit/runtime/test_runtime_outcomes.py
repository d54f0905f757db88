"""The reconcile outcome policy (``result.decide``) and the workers that act on it.

Workers run on a real ``WorkQueue`` with plain async reconcile functions; no cluster.
"""

import asyncio

import pytest
from support import waiting

from sro import errors, settings
from sro.observe import metrics
from sro.queue import clock, ratelimit, workqueue
from sro.runtime import controller, result

pytestmark = pytest.mark.unit


def test_success_forgets_the_key() -> None:
    assert result.decide(result.DONE) == result.Outcome(label="success", action=result.Action.FORGET)


def test_requeue_after_forgets_and_adds_after_the_delay() -> None:
    outcome = result.decide(result.requeue_after(5))
    assert outcome.action is result.Action.REQUEUE_AFTER and outcome.delay == 5


def test_an_error_is_retried_with_backoff() -> None:
    assert result.decide(RuntimeError("x")).action is result.Action.RETRY


def test_a_terminal_error_is_not_retried() -> None:
    outcome = result.decide(errors.Terminal(ValueError("bad recipe")))
    assert outcome == result.Outcome(label="terminal", action=result.Action.DROP)


def test_a_timeout_is_retried_and_labelled_as_such() -> None:
    assert result.decide(TimeoutError()).label == "timeout"


def test_a_negative_requeue_is_refused() -> None:
    with pytest.raises(ValueError):
        result.Result(requeue_after=-1)


def make(reconcile: controller.Reconcile, **kw: float) -> tuple[controller.Controller, metrics.Metrics]:
    m = metrics.Metrics()
    q: workqueue.WorkQueue[str] = workqueue.WorkQueue(
        limiter=ratelimit.ExponentialBackoff(base=0.001, cap=0.01), metrics=m
    )
    c = controller.Controller(
        queue=q,
        reconcile=reconcile,
        settings=settings.ControllerSettings(
            workers=int(kw.get("workers", 3)), reconcile_timeout=kw.get("timeout", 5)
        ),
        metrics=m,
    )
    return c, m


async def test_a_failing_reconcile_is_retried_until_it_succeeds() -> None:
    calls: list[str] = []

    async def reconcile(key: str) -> result.Result:
        calls.append(key)
        if len(calls) < 3:
            raise RuntimeError("not yet")
        return result.DONE

    c, m = make(reconcile)
    c.queue.add("a")
    while len(calls) < 3:
        key = await asyncio.wait_for(c.queue.get(), 2)
        assert key is not None
        await c.process(key)
    assert m.value("sro_reconcile_total", {"result": "error"}) == 2
    assert m.value("sro_reconcile_total", {"result": "success"}) == 1
    assert c.queue.num_requeues("a") == 0, "success forgets the backoff"


async def test_a_terminal_error_is_counted_and_the_key_dropped() -> None:
    async def reconcile(key: str) -> result.Result:
        raise errors.Terminal(ValueError("no"))

    c, m = make(reconcile)
    c.queue.add("a")
    outcome = await c.process(await c.queue.get() or "")
    assert outcome.label == "terminal"
    assert len(c.queue) == 0 and c.queue.waiting == 0
    assert m.value("sro_reconcile_total", {"result": "terminal"}) == 1


async def test_a_reconcile_over_its_timeout_is_cancelled_and_retried() -> None:
    async def reconcile(key: str) -> result.Result:
        await asyncio.Event().wait()
        return result.DONE

    c, m = make(reconcile, timeout=0.05)
    c.queue.add("a")
    outcome = await c.process(await c.queue.get() or "")
    assert outcome.label == "timeout"
    assert m.value("sro_reconcile_total", {"result": "timeout"}) == 1
    assert c.queue.waiting == 1
    assert c.queue.processing == frozenset(), "done() ran"


async def test_the_cost_a_reconcile_reports_is_what_the_queue_rests_by() -> None:
    clock_ = clock.ManualClock()
    q: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=clock_, pace=11.0, rest_cap=60.0)

    async def reconciled(key: str) -> result.Result:
        q.add(key)  # news while it runs: the next pass rests
        clock_.advance(3.0)  # most of the pass: waiting on answers
        return result.Result(cost=0.1 if key == "said" else None)

    c = controller.Controller(
        queue=q, reconcile=reconciled, settings=settings.ControllerSettings(), metrics=metrics.Metrics()
    )

    for key in ("said", "unsaid"):
        q.add(key)
        assert await c.process(q.try_get() or "") == result.Outcome(
            label="success", action=result.Action.FORGET
        )
    assert q.ready_at("said") == pytest.approx(clock_.now() - 3.0 + 10 * 0.1)
    assert q.ready_at("unsaid") == pytest.approx(clock_.now() + 10 * 3.0)


def test_a_negative_cost_is_refused() -> None:
    with pytest.raises(ValueError, match="cost"):
        result.Result(cost=-0.1)


async def test_workers_never_reconcile_one_key_twice_at_once() -> None:
    running: set[str] = set()
    overlaps = 0
    passes = 0

    async def reconcile(key: str) -> result.Result:
        nonlocal overlaps, passes
        if key in running:
            overlaps += 1
        running.add(key)
        await asyncio.sleep(0.001)
        running.discard(key)
        passes += 1
        return result.DONE

    c, m = make(reconcile, workers=4)
    task = asyncio.create_task(c.run())
    for i in range(2000):
        c.queue.add(f"k{i % 5}")
        if i % 50 == 0:
            await asyncio.sleep(0)
    await waiting.wait_for(
        lambda: not len(c.queue) and not c.queue.processing, timeout=30, interval=0.005, message="queue idle"
    )
    c.stop()
    await asyncio.wait_for(task, 5)
    assert overlaps == 0
    assert 5 <= passes < 2000, "bursts collapse"
    assert m.value("sro_active_workers") == 0


async def test_stop_lets_in_flight_reconciles_finish() -> None:
    started = asyncio.Event()
    release = asyncio.Event()
    finished: list[str] = []

    async def reconcile(key: str) -> result.Result:
        started.set()
        await release.wait()
        finished.append(key)
        return result.DONE

    c, _ = make(reconcile)
    task = asyncio.create_task(c.run())
    c.queue.add("a")
    await asyncio.wait_for(started.wait(), 2)
    c.stop()
    c.queue.add("b")
    release.set()
    await asyncio.wait_for(task, 2)
    assert finished == ["a"]


async def test_workers_stop_when_cancelled_even_if_a_reconcile_absorbed_the_cancellation() -> None:
    """A cancellation that lands while a TaskGroup inside the reconcile is failing (sro's
    writes refused by the lease fence at the very moment the lease is lost) comes out as
    the group's error, not as CancelledError (Python 3.11's TaskGroup gives errors
    priority). The worker must stop anyway, not wait on the queue forever."""
    entered = asyncio.Event()

    async def reconcile(key: str) -> result.Result:
        entered.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise RuntimeError("a write refused at the same moment") from None
        return result.DONE

    c, _ = make(reconcile, workers=1)
    c.queue.add("a")
    workers = asyncio.create_task(c.run())
    await asyncio.wait_for(entered.wait(), 2)
    workers.cancel()
    done, _ = await asyncio.wait({workers}, timeout=2)
    assert workers in done, "the worker stopped"
    assert workers.cancelled()
