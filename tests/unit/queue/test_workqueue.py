"""The work queue's properties, one test each: fair, stingy, exclusive, delayed, paced, shutdown.

Covers the synchronous core with a manual clock and the waiting ``get``; the
randomised interleavings are in tests/property/test_workqueue.py.
"""

import asyncio

import pytest

from sro.queue import clock, ratelimit, workqueue

pytestmark = pytest.mark.unit


def make(
    *, pace: float = 1.0, rest_cap: float = 0.0, busy: int = 0
) -> tuple[workqueue.WorkQueue[str], clock.ManualClock]:
    c = clock.ManualClock()
    limiter = ratelimit.ExponentialBackoff(base=0.005, cap=1.0)
    return workqueue.WorkQueue(clock=c, limiter=limiter, pace=pace, rest_cap=rest_cap, busy=busy), c


def test_keys_are_handed_out_in_the_order_they_were_added() -> None:
    q, _ = make()
    for k in "abc":
        q.add(k)
    assert [q.try_get(), q.try_get(), q.try_get(), q.try_get()] == ["a", "b", "c", None]


def test_a_burst_of_adds_collapses_into_one_pass() -> None:
    q, _ = make()
    for _ in range(100):
        q.add("a")
    assert len(q) == 1
    assert q.try_get() == "a"
    assert q.try_get() is None


def test_a_key_being_processed_is_not_handed_to_a_second_worker() -> None:
    q, _ = make()
    q.add("a")
    assert q.try_get() == "a"
    q.add("a")
    assert q.try_get() is None
    assert q.processing == {"a"}


def test_an_add_during_processing_leads_to_exactly_one_more_pass() -> None:
    q, _ = make()
    q.add("a")
    assert q.try_get() == "a"
    q.add("a")
    q.add("a")
    q.done("a")
    assert q.try_get() == "a"
    q.done("a")
    assert q.try_get() is None


def test_done_without_a_new_add_does_not_requeue() -> None:
    q, _ = make()
    q.add("a")
    q.try_get()
    q.done("a")
    assert len(q) == 0


def test_add_after_holds_the_key_until_its_ready_time() -> None:
    q, c = make()
    q.add_after("a", 5.0)
    assert q.try_get() is None
    c.advance(4.9)
    assert q.try_get() is None
    c.advance(0.2)
    assert q.try_get() == "a"


def test_the_earliest_ready_time_wins() -> None:
    q, c = make()
    q.add_after("a", 10.0)
    q.add_after("a", 2.0)
    q.add_after("a", 5.0)
    assert q.ready_at("a") == 2.0
    c.advance(2.0)
    assert q.try_get() == "a"


def test_add_after_with_no_delay_adds_at_once() -> None:
    q, _ = make()
    q.add_after("a", 0)
    assert q.try_get() == "a"


def test_rate_limited_adds_back_off_exponentially_per_key() -> None:
    q, c = make()
    delays = []
    for _ in range(4):
        q.add_rate_limited("a")
        start = c.now()
        ready = q.ready_at("a")
        assert ready is not None
        delays.append(round(ready - start, 6))
        c.advance(ready - start)
        assert q.try_get() == "a"
        q.done("a")
    assert delays == [0.005, 0.01, 0.02, 0.04]
    assert q.num_requeues("a") == 4


def test_forget_resets_the_backoff() -> None:
    q, _ = make()
    q.add_rate_limited("a")
    q.add_rate_limited("a")
    q.forget("a")
    assert q.num_requeues("a") == 0


def test_backoff_is_capped() -> None:
    limiter = ratelimit.ExponentialBackoff(base=0.005, cap=2.0)
    delays = [limiter.when("a") for _ in range(200)]
    assert max(delays) == 2.0
    assert delays == sorted(delays)


def test_a_key_added_after_shutdown_is_ignored() -> None:
    q, _ = make()
    q.shutdown()
    q.add("a")
    q.add_after("b", 1)
    assert len(q) == 0 and q.waiting == 0


async def test_get_returns_none_once_shut_down() -> None:
    q, _ = make()
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.shutdown()
    assert await asyncio.wait_for(getter, 2) is None


async def test_get_waits_for_an_add() -> None:
    q: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not getter.done()
    q.add("a")
    assert await asyncio.wait_for(getter, 2) == "a"


async def test_get_wakes_up_when_a_delayed_key_becomes_ready() -> None:
    q: workqueue.WorkQueue[str] = workqueue.WorkQueue()
    q.add_after("a", 0.05)
    assert await asyncio.wait_for(q.get(), 2) == "a"


async def test_shutdown_with_drain_waits_for_keys_in_processing() -> None:
    q, _ = make()
    q.add("a")
    assert q.try_get() == "a"
    drained = asyncio.create_task(q.shutdown_with_drain())
    await asyncio.sleep(0)
    assert not drained.done()
    q.done("a")
    await asyncio.wait_for(drained, 2)
    assert q.processing == frozenset()


def paced(
    pace: float = 3.0, rest_cap: float = 5.0, busy: int = 0
) -> tuple[workqueue.WorkQueue[str], clock.ManualClock]:
    return make(pace=pace, rest_cap=rest_cap, busy=busy)


def test_a_paced_key_added_during_its_pass_rests_twice_the_pass_before_the_next() -> None:
    q, c = paced()
    q.add("a")
    assert q.try_get() == "a"
    q.add("a")  # news while it runs
    c.advance(0.5)
    q.done("a")
    assert q.try_get() is None
    assert q.ready_at("a") == pytest.approx(c.now() + 1.0)
    c.advance(0.99)
    assert q.try_get() is None
    c.advance(0.01)
    assert q.try_get() == "a"


def test_a_pass_that_says_what_it_cost_rests_by_that_not_by_its_duration() -> None:
    q, c = paced(pace=20.0)
    q.add("a")
    assert q.try_get() == "a"
    q.add("a")
    c.advance(2.0)  # most of it waiting on answers
    q.done("a", cost=0.05)  # computing
    assert q.ready_at("a") == pytest.approx(c.now() + 19 * 0.05)
    q.add("b")
    assert q.try_get() == "b"
    q.add("b")
    c.advance(0.5)
    q.done("b")  # no cost said: the whole pass
    assert q.ready_at("b") == pytest.approx(c.now() + 5.0)  # 19 * 0.5, capped


def test_a_rest_is_at_most_rest_ratio_times_the_whole_pass() -> None:
    c = clock.ManualClock()
    q: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=c, pace=20.0, rest_cap=5.0, rest_ratio=2.0)
    for key, took, cost, rest in (("step", 0.5, 0.4, 1.0), ("flood", 4.0, 0.2, 3.8)):
        q.add(key)
        assert q.try_get() == key
        q.add(key)
        c.advance(took)
        q.done(key, cost=cost)
        assert q.ready_at(key) == pytest.approx(c.now() + rest)  # 19 * 0.4 = 7.6 > 2 * 0.5; 19 * 0.2


def test_adds_during_a_rest_collapse_into_one_pass_at_its_end() -> None:
    q, c = paced()
    q.add("a")
    assert q.try_get() == "a"
    c.advance(1.0)
    q.done("a")  # nothing new: it rests until 3.0 only if news comes
    for _ in range(5):
        q.add("a")
        c.advance(0.1)
    assert q.try_get() is None
    c.advance(2.0)
    assert q.try_get() == "a"
    assert q.try_get() is None


def test_a_key_added_after_its_rest_ended_runs_at_once() -> None:
    q, c = paced()
    q.add("a")
    assert q.try_get() == "a"
    c.advance(0.2)
    q.done("a")
    c.advance(0.4)  # the rest (0.4 s) is over
    q.add("a")
    assert q.try_get() == "a"


def test_a_rest_is_capped_and_other_keys_do_not_wait_for_it() -> None:
    q, c = paced(rest_cap=5.0)
    q.add("slow")
    assert q.try_get() == "slow"
    c.advance(60.0)  # a pass held up by retries
    q.done("slow")
    q.add("slow")
    q.add("other")
    assert q.try_get() == "other"
    assert q.ready_at("slow") == pytest.approx(c.now() + 5.0)


def test_only_a_pass_added_to_busy_times_while_it_ran_rests() -> None:
    q, c = paced(busy=3)
    q.add("a")
    assert q.try_get() == "a"
    q.add("a")
    q.add("a")  # two adds: one node's step, not a flood
    c.advance(1.0)
    q.done("a")
    assert q.try_get() == "a", "the next pass comes at once"
    for _ in range(3):  # a flood: three adds while it runs
        q.add("a")
    c.advance(1.0)
    q.done("a")
    assert q.try_get() is None
    assert q.ready_at("a") == pytest.approx(c.now() + 2.0)
    c.advance(2.0)
    assert q.try_get() == "a"
    c.advance(1.0)
    q.done("a")  # no add while it ran: no rest either
    q.add("a")
    assert q.try_get() == "a"
    q.add("b")  # adds of another key do not count for this one
    q.add("b")
    q.add("b")
    c.advance(1.0)
    q.done("a")
    q.add("a")
    assert [q.try_get(), q.try_get()] == ["b", "a"]


def test_adds_counted_for_one_pass_do_not_carry_into_the_next() -> None:
    q, c = paced(busy=2)
    q.add("a")
    assert q.try_get() == "a"
    q.add("a")  # one add in this pass
    c.advance(1.0)
    q.done("a")
    assert q.try_get() == "a"
    q.add("a")  # and one in the next: neither pass was busy
    c.advance(1.0)
    q.done("a")
    assert q.try_get() == "a"
    with pytest.raises(ValueError, match="busy"):
        workqueue.WorkQueue(pace=3.0, busy=-1)
    with pytest.raises(ValueError, match="rest_ratio"):
        workqueue.WorkQueue(pace=3.0, rest_ratio=-1.0)


def test_pace_one_is_back_to_back_and_a_pace_below_one_is_refused() -> None:
    q, c = paced(pace=1.0)
    q.add("a")
    assert q.try_get() == "a"
    q.add("a")
    c.advance(3.0)
    q.done("a")
    assert q.try_get() == "a"
    with pytest.raises(ValueError, match="pace"):
        workqueue.WorkQueue(pace=0.5)


def test_the_latency_of_a_rested_key_counts_from_its_first_add() -> None:
    latencies: list[float] = []

    class Recorder(workqueue.NoMetrics):
        def queue_latency(self, seconds: float) -> None:
            latencies.append(seconds)

    c = clock.ManualClock()
    q = workqueue.WorkQueue(clock=c, pace=3.0, rest_cap=5.0, metrics=Recorder())
    q.add("a")
    assert q.try_get() == "a"
    c.advance(1.0)
    q.done("a")
    q.add("a")
    c.advance(2.0)
    assert q.try_get() == "a"
    assert latencies == [0.0, pytest.approx(2.0)]


def test_token_bucket_spaces_retries_once_the_burst_is_spent() -> None:
    c = clock.ManualClock()
    bucket = ratelimit.TokenBucket(rate=10, burst=2, clock=c)
    assert [bucket.when("a"), bucket.when("b")] == [0.0, 0.0]
    assert bucket.when("c") == pytest.approx(0.1)
    c.advance(1.0)
    assert bucket.when("d") == 0.0


def test_max_of_takes_the_largest_delay() -> None:
    limiter = ratelimit.MaxOf(
        ratelimit.ExponentialBackoff(base=1.0, cap=100), ratelimit.ExponentialBackoff(base=3.0, cap=100)
    )
    assert limiter.when("a") == 3.0
    assert limiter.num_requeues("a") == 1
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
