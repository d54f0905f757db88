"""Which waiting pods' log tails to fetch this pass, and when to look again.

Log tails do not come with watch events, so a state that waits for a line in a pod's log
(``wait-for-logs``) is polled. Each pod is polled on its own clock: its tail is fetched
when this process has not read it yet, or when its interval has passed since the last
read (a quarter of the pod's age, between ``LOG_POLL_MIN`` and ``LOG_POLL``). A pass that
comes sooner for another reason (any pod or node event) does not fetch it again: a
thousand drivers still building would otherwise be read in full on every pass, each pass
held until the last tail came back.

However many pods wait, the fleet's re-reads are bounded too: a rate (``sro run
--log-reads-per-second``, by default ``FLEET_READS_PER_SECOND``) is shared among the
waiting pods, so with N of them each is read again at most every N / rate seconds when
that is longer than its own interval (rate 0: no fleet bound). Each log
read is a request the API server proxies to a kubelet and up to 256 KiB back; 5,000
drivers building for minutes would otherwise be read 500 times a second.

A pass fetches at most as many tails as it may make writes (``limit``: the planner's
``PASS_WRITES``), pods never read first, then those that waited longest; the rest are
asked for by the next pass, which comes at once. A fleet whose drivers all start together
then has its first matches recorded while later tails are still being read, and no pass
waits on thousands of reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sro.model import progress, times, views

LOG_POLL = timedelta(seconds=10)
"""Longest wait between two fetches of a pod's log tail while it has not matched."""
LOG_POLL_MIN = timedelta(seconds=1)
"""Shortest: a container that just started often prints its ready line within seconds,
so a young pod is looked at often (every quarter of its age, at least this far apart),
an old one every ``LOG_POLL``: few fetches, and no state left waiting ten seconds for a
line printed right after the first look."""
FLEET_READS_PER_SECOND = 50.0
"""Most tails read again per second by default, over every pod waiting: above 500 waiting
pods (whose own interval is ``LOG_POLL``) each waits longer, 100 s apart at 5,000. A pod's
first read is not held back by it (that is bounded by the pass's ``limit``)."""


@dataclass(frozen=True, kw_only=True)
class Polls:
    """The tails to fetch this pass, and how soon a pass must come for the next ones
    (None: nothing waits for a tail)."""

    due: tuple[progress.LogRequest, ...]
    wake_in: timedelta | None


def interval(
    created: datetime | None, *, now: datetime, waiting: int = 1, rate: float = FLEET_READS_PER_SECOND
) -> timedelta:
    """How long a pod created at ``created`` waits between two reads of its tail: a
    quarter of its age, between ``LOG_POLL_MIN`` and ``LOG_POLL`` (unknown age: the
    longest), or its share of ``rate`` reads a second among ``waiting`` pods if longer
    (``rate`` 0: no share)."""
    share = timedelta(seconds=waiting / rate) if rate > 0 else timedelta(0)
    if created is None:
        return max(LOG_POLL, share)
    return max(share, min(LOG_POLL, max(LOG_POLL_MIN, max(now - created, timedelta(0)) / 4)))


def polls(
    needed: Sequence[progress.LogRequest],
    pods: Mapping[tuple[str, str], views.PodView],
    *,
    read: Mapping[str, datetime],
    now: datetime,
    limit: int,
    rate: float = FLEET_READS_PER_SECOND,
) -> Polls:
    """Of the pods whose tails the walk needs, those due now, at most ``limit`` (see the
    module docstring); ``pods``: the pods by (namespace, name) (``Observed.pods_by_name``);
    ``read``: when this process last asked for each pod's tails, by uid; ``rate``: the
    fleet's re-reads a second."""
    if not needed:
        return Polls(due=(), wake_in=None)
    unread: list[progress.LogRequest] = []
    again: list[tuple[datetime, progress.LogRequest]] = []
    waits: list[timedelta] = []
    for request in needed:
        pod = pods.get((request.namespace, request.name))
        born = pod.created if pod is not None and pod.uid == request.uid else ""
        every = interval(times.parse(born), now=now, waiting=len(needed), rate=rate)
        last = read.get(request.uid)
        if last is not None and now - last < every:
            waits.append(last + every - now)
            continue
        if last is None:
            unread.append(request)
        else:
            again.append((last, request))
        waits.append(every)  # read now, it is due again this long from now
    chosen = [*unread, *(request for _, request in sorted(again))]
    if len(chosen) > limit:
        return Polls(due=tuple(chosen[:limit]), wake_in=timedelta(0))
    return Polls(due=tuple(chosen), wake_in=min(waits))
