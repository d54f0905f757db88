"""Reading a stream in batches: what a large fleet's heartbeats and a converging fleet's pods cost.

A settled fleet of thousands of nodes still sends its Node watch an event every few
milliseconds to tens of milliseconds (each kubelet's status report, the node
controller's readiness flips), and none of them is for a reconcile. Read one at a time,
each wakes the process alone: a wake-up finds the CPU's caches cold, and the same event
costs several times what it does read among others (measured on this project's bench
machine: decoding a 15 KB Node costs about 19 µs read in a run, 140-170 µs read alone
after a quarter of a second asleep; four at a time about 60 µs each).

So a stream that has been calm for a while (none of its events queued any work for
``quiet_for`` seconds) rests ``rest`` seconds after each read, its socket untouched, and
the next read takes everything the server sent meanwhile. A stream whose events queue
work stops resting that long, until it has been quiet that long again: the first change
after a calm waits at most one rest (a quarter of a second by default), the changes that
follow it at most a busy rest (below). A read (all
the connection held when the reader woke) of ``busy_bytes`` or more is not followed by a
rest: a fleet flipping NotReady at once is read as fast as it comes, never held in the
socket where the server might give up on a slow watcher.

A stream whose events do queue work (a converging fleet: hundreds of pod events a
second) rests too, ``busy_rest`` after each read short of a burst: a few hundredths of a
second, which a reconcile pass of a converging fleet (tenths of a second to seconds) does
not notice, and in which the next events come together instead of one wake-up each. An
event read after a quiet moment is read at once; one that follows within a rest waits at
most that rest. Measured with ``hack/bench converge`` at 1,000 nodes, one run each way on
one machine, with the Pod and the Node watch resting: pod and node reads 28,500 -> 5,800
(10 pod events a read instead of 1.8), the operator's CPU while converging 16.2 -> 14.3
CPU-seconds, Ready no later (169 and 162 s); at 100 nodes 2.9 -> 2.4 CPU-seconds
(``WatchSettings.busy_rest``).

Pure: the clock is given, and the reader (``sro.kube.watchlines``) does the resting.
"""

from __future__ import annotations

import time
from collections.abc import Callable

BUSY_BYTES = 128 * 1024
"""A read at least this large is a burst, not a trickle: no rest after it (at a quarter
of a second's rest, half a MiB a second: tens of Node events a second)."""


class Calm:
    """When a stream's reader rests, and for how long."""

    def __init__(
        self,
        *,
        rest: float,
        quiet_for: float,
        busy_rest: float = 0.0,
        busy_bytes: int = BUSY_BYTES,
        clock: Callable[[], float] = time.monotonic,
        on_rest: Callable[[], None] = lambda: None,
    ) -> None:
        """``rest``: after a read while calm; ``busy_rest``: after a read while the stream's
        events queue work (0 for either: none). ``on_rest``: told of each rest while calm
        (``sro_watch_rests_total``); the busy ones show as events per read."""
        self._rest = rest
        self._busy_rest = busy_rest
        self._quiet_for = quiet_for
        self._busy_bytes = busy_bytes
        self._clock = clock
        self._on_rest = on_rest
        self._stirred = clock()  # not calm before ``quiet_for`` has passed

    def stirred(self) -> None:
        """One of the stream's events queued work: read at once for ``quiet_for``."""
        self._stirred = self._clock()

    def rest(self, read: int) -> float:
        """Seconds to rest before the next read, after one of ``read`` bytes (0: none)."""
        if read >= self._busy_bytes:
            return 0.0
        if self._clock() - self._stirred < self._quiet_for:
            return self._busy_rest
        if self._rest <= 0:
            return 0.0
        self._on_rest()
        return self._rest
