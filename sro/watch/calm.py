"""Reading a quiet stream in batches: what a large, settled fleet's heartbeats cost.

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
work reads at once again, and keeps doing so until it has been quiet that long again:
the first change after a calm waits at most one rest (a quarter of a second by default),
the changes that follow it none. A read (all the connection held when the reader woke)
of ``busy_bytes`` or more is not followed by a rest: a fleet flipping NotReady at once is
read as fast as it comes, never held in the socket where the server might give up on a
slow watcher.

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
        busy_bytes: int = BUSY_BYTES,
        clock: Callable[[], float] = time.monotonic,
        on_rest: Callable[[], None] = lambda: None,
    ) -> None:
        """``on_rest``: told of each rest (``sro_watch_rests_total``)."""
        self._rest = rest
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
        if self._rest <= 0 or read >= self._busy_bytes:
            return 0.0
        if self._clock() - self._stirred < self._quiet_for:
            return 0.0
        self._on_rest()
        return self._rest
