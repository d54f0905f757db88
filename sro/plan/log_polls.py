"""When to fetch a waiting pod's log tail again.

Log tails do not come with watch events, so a state that waits for a line in a pod's log
(``wait-for-logs``) is polled: the planner asks for a pass this long after the last one
while any tail it needs has not matched.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sro.model import progress, times, views

LOG_POLL = timedelta(seconds=10)
"""Longest wait between two fetches of a pod's log tail while it has not matched."""
LOG_POLL_MIN = timedelta(seconds=1)
"""Shortest: a container that just started often prints its ready line within seconds,
so a young pod is looked at often (every quarter of its age, at least this far apart),
an old one every ``LOG_POLL``: few fetches, and no state left waiting ten seconds for a
line printed right after the first look."""


def log_poll(
    needed: Sequence[progress.LogRequest], pods: Sequence[views.PodView], *, now: datetime
) -> timedelta | None:
    """When to fetch log tails again: a quarter of the youngest waiting pod's age, between
    ``LOG_POLL_MIN`` and ``LOG_POLL`` (a pod of unknown age waits the longest)."""
    if not needed:
        return None
    created = {p.uid: p.created for p in pods}
    youngest = LOG_POLL * 4
    for request in needed:
        born = times.parse(created.get(request.uid, ""))
        if born is not None:
            youngest = min(youngest, max(now - born, timedelta(0)))
    return min(LOG_POLL, max(LOG_POLL_MIN, youngest / 4))
