"""Which waiting pods' log tails a pass fetches (``sro.plan.log_polls``), and the planner
asking only for those."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from builders import T0, ds, ds_pod, live, node, seen, states, wanted
from hypothesis import given
from hypothesis import strategies as st

from sro.model import progress, views
from sro.plan import log_polls, planner

pytestmark = pytest.mark.unit

LIMIT = planner.PASS_WRITES  # what the planner hands


def stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def named(pods: list[views.PodView]) -> dict[tuple[str, str], views.PodView]:
    return {(p.namespace, p.name): p for p in pods}


def waiting(count: int, *, age: timedelta) -> tuple[list[progress.LogRequest], list[views.PodView]]:
    """``count`` pods created ``age`` before T0, each waiting for its log to match."""
    requests = [
        progress.LogRequest(namespace="ns", name=f"driver-{i:05d}", uid=f"u{i:05d}", containers=("main",))
        for i in range(count)
    ]
    pods = [
        views.PodView(namespace="ns", name=r.name, uid=r.uid, created=stamp(T0 - age), ready=True)
        for r in requests
    ]
    return requests, pods


def test_a_pod_never_read_is_read_at_once_and_again_a_quarter_of_its_age_later() -> None:
    requests, pods = waiting(1, age=timedelta(seconds=20))
    first = log_polls.polls(requests, named(pods), read={}, now=T0, limit=LIMIT)
    assert first.due == tuple(requests)
    assert first.wake_in == timedelta(seconds=5)


def test_a_pod_read_within_its_interval_is_not_read_again_by_a_pass_that_comes_sooner() -> None:
    requests, pods = waiting(1, age=timedelta(minutes=5))  # old: every LOG_POLL
    read = {requests[0].uid: T0 - timedelta(seconds=3)}
    sooner = log_polls.polls(requests, named(pods), read=read, now=T0, limit=LIMIT)
    assert sooner.due == ()
    assert sooner.wake_in == log_polls.LOG_POLL - timedelta(seconds=3)
    later = log_polls.polls(requests, named(pods), read=read, now=T0 + timedelta(seconds=7), limit=LIMIT)
    assert later.due == tuple(requests)
    assert later.wake_in == log_polls.LOG_POLL


def test_the_interval_is_a_quarter_of_the_age_between_its_bounds() -> None:
    assert log_polls.interval(T0, now=T0) == log_polls.LOG_POLL_MIN
    assert log_polls.interval(T0 - timedelta(seconds=8), now=T0) == timedelta(seconds=2)
    assert log_polls.interval(T0 - timedelta(hours=1), now=T0) == log_polls.LOG_POLL
    assert log_polls.interval(T0 + timedelta(seconds=30), now=T0) == log_polls.LOG_POLL_MIN  # clock skew
    assert log_polls.interval(None, now=T0) == log_polls.LOG_POLL


def test_a_pass_reads_at_most_its_share_pods_never_read_first_and_the_next_pass_comes_at_once() -> None:
    count = LIMIT * 2 + 10
    requests, pods = waiting(count, age=timedelta(minutes=5))
    read = {r.uid: T0 - timedelta(seconds=60 - i) for i, r in enumerate(requests[:20])}  # 20 read long ago
    first = log_polls.polls(requests, named(pods), read=read, now=T0, limit=LIMIT)
    assert len(first.due) == LIMIT
    assert first.wake_in == timedelta(0)
    assert not {r.uid for r in first.due} & set(read)  # every pod never read comes first


def test_passes_read_every_waiting_pod_in_turn_none_starved() -> None:
    count = LIMIT * 5 + 3
    requests, pods = waiting(count, age=timedelta(minutes=5))
    read: dict[str, datetime] = {}
    now = T0
    reads: dict[str, list[datetime]] = {r.uid: [] for r in requests}
    for _ in range(40):  # 40 passes, 0.5 s apart unless told to come sooner
        polled = log_polls.polls(requests, named(pods), read=read, now=now, limit=LIMIT)
        for r in polled.due:
            read[r.uid] = now
            reads[r.uid].append(now)
        assert polled.wake_in is not None
        now += max(polled.wake_in, timedelta(milliseconds=500))
    assert all(reads.values()), "every pod was read"
    first_round = math.ceil(count / LIMIT)
    assert max(times[0] for times in reads.values()) <= T0 + timedelta(seconds=0.5) * (first_round - 1)
    for times in reads.values():  # never sooner than its interval once read
        assert all(b - a >= log_polls.LOG_POLL for a, b in itertools.pairwise(times))


def test_the_interval_grows_with_the_fleet_past_its_share_of_the_reads() -> None:
    old = T0 - timedelta(hours=1)
    rate = log_polls.FLEET_READS_PER_SECOND
    assert log_polls.interval(old, now=T0, waiting=10) == log_polls.LOG_POLL
    assert log_polls.interval(old, now=T0, waiting=5_000) == timedelta(seconds=5_000 / rate)
    assert log_polls.interval(T0, now=T0, waiting=5_000) == timedelta(seconds=5_000 / rate)
    assert log_polls.interval(None, now=T0, waiting=5_000) == timedelta(seconds=5_000 / rate)


@pytest.mark.parametrize("rate", [10.0, 200.0, 0.0])
def test_the_fleets_rate_is_the_one_given_and_zero_leaves_each_pod_its_own_interval(rate: float) -> None:
    old = T0 - timedelta(hours=1)
    share = timedelta(seconds=5_000 / rate) if rate else timedelta(0)
    assert log_polls.interval(old, now=T0, waiting=5_000, rate=rate) == max(log_polls.LOG_POLL, share)
    requests, pods = waiting(1_000, age=timedelta(minutes=5))
    read = {r.uid: T0 for r in requests}  # every pod read at T0
    soon = T0 + log_polls.LOG_POLL  # each one's own interval has passed
    polled = log_polls.polls(requests, named(pods), read=read, now=soon, limit=LIMIT, rate=rate)
    if rate and 1_000 / rate > log_polls.LOG_POLL.total_seconds():
        assert polled.due == () and polled.wake_in == timedelta(seconds=1_000 / rate) - log_polls.LOG_POLL
    else:
        assert len(polled.due) == LIMIT and polled.wake_in == timedelta(0)


def test_a_thousand_drivers_building_for_minutes_are_read_at_the_fleets_rate_none_starved() -> None:
    count = 1_000  # each one's share of the fleet's reads (20 s) is past its own interval (10 s)
    requests, pods = waiting(count, age=timedelta(minutes=5))
    by_name = named(pods)
    read: dict[str, datetime] = {}
    reads: dict[str, list[datetime]] = {r.uid: [] for r in requests}
    now = T0
    end = T0 + timedelta(minutes=3)
    while now < end:  # passes at least 0.5 s apart, sooner only when told
        polled = log_polls.polls(requests, by_name, read=read, now=now, limit=LIMIT)
        for r in polled.due:
            read[r.uid] = now
            reads[r.uid].append(now)
        assert polled.wake_in is not None
        now += max(polled.wake_in, timedelta(milliseconds=500))
    first = {r.uid: reads[r.uid][0] for r in requests}
    assert max(first.values()) - T0 < timedelta(seconds=5), "every pod read once within a few passes"
    again = [t for times in reads.values() for t in times[1:]]
    window = (end - max(first.values())).total_seconds()
    assert len(again) <= log_polls.FLEET_READS_PER_SECOND * window, "re-reads within the fleet's rate"
    share = timedelta(seconds=count / log_polls.FLEET_READS_PER_SECOND)
    for times in reads.values():
        assert all(b - a >= share for a, b in itertools.pairwise(times)), "none sooner than its share"
        assert end - times[-1] <= share + timedelta(seconds=2), "none starved"


def test_nothing_waiting_asks_for_nothing_and_no_pass() -> None:
    assert log_polls.polls((), {}, read={}, now=T0, limit=LIMIT) == log_polls.Polls(due=(), wake_in=None)


@given(
    st.lists(
        st.tuples(st.integers(min_value=-5, max_value=600), st.one_of(st.none(), st.integers(0, 30))),
        min_size=1,
        max_size=150,
    ),
    st.integers(min_value=1, max_value=160),
)
def test_what_is_due_is_bounded_never_read_first_and_never_early(
    pods_: list[tuple[int, int | None]], limit: int
) -> None:
    """Each pod: its age and how long ago it was read (None: never), in seconds."""
    requests = [
        progress.LogRequest(namespace="ns", name=f"p{i}", uid=f"u{i}", containers=("main",))
        for i in range(len(pods_))
    ]
    created = {r.uid: T0 - timedelta(seconds=age) for r, (age, _) in zip(requests, pods_, strict=True)}
    pods = [
        views.PodView(namespace="ns", name=r.name, uid=r.uid, created=stamp(created[r.uid])) for r in requests
    ]
    read = {
        r.uid: T0 - timedelta(seconds=ago)
        for r, (_, ago) in zip(requests, pods_, strict=True)
        if ago is not None
    }
    polled = log_polls.polls(requests, named(pods), read=read, now=T0, limit=limit)
    assert len(polled.due) <= limit
    assert polled.wake_in is not None and polled.wake_in >= timedelta(0)
    seen_read = False
    for r in polled.due:
        if r.uid in read:
            seen_read = True
            assert T0 - read[r.uid] >= log_polls.interval(created[r.uid], now=T0, waiting=len(requests))
        else:
            assert not seen_read, "a pod never read comes before every pod read before"
    unread_left = [r for r in requests if r not in polled.due and r.uid not in read]
    assert not unread_left or len(polled.due) == limit


def test_the_planner_asks_for_a_tail_read_a_moment_ago_only_once_its_interval_passed() -> None:
    d = ds("driver", "state-driver", logs=r"driver loaded")
    pod = ds_pod(d, "n1", created=stamp(T0 - timedelta(minutes=5)))
    want = wanted(states("state-driver"), [d], ["n1"])
    just_read = {pod.uid: T0 - timedelta(seconds=2)}
    world = seen([node("n1")], objects=[live(d)], pods=[pod], log_reads=just_read)
    sooner = planner.plan(want, world, now=T0)
    assert sooner.logs_needed == ()
    assert sooner.requeue_after == (log_polls.LOG_POLL - timedelta(seconds=2)).total_seconds()
    assert sooner.status["phase"] == "Progressing"  # still waiting for the line
    due = planner.plan(want, world, now=T0 + log_polls.LOG_POLL)
    assert [r.uid for r in due.logs_needed] == [pod.uid]


def test_a_pod_of_the_same_name_but_another_uid_gives_no_age() -> None:
    requests, pods = waiting(1, age=timedelta(seconds=8))  # its own age: every 2 s
    other = {(p.namespace, p.name): replace(p, uid="made-again") for p in pods}
    own = log_polls.polls(requests, named(pods), read={}, now=T0, limit=LIMIT)
    assert own.wake_in == timedelta(seconds=2)
    assert log_polls.polls(requests, other, read={}, now=T0, limit=LIMIT).wake_in == log_polls.LOG_POLL
