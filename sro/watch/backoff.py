"""How long a reflector waits before retrying a failed list or watch.

Pure, with the clock injected. client-go's reflector rules: start at 0.8 s, double to
at most 30 s, add up to 100 % jitter so many reflectors failing together do not
retry together, and start over once the stream has been healthy for 2 minutes
(``reset_after``) so one blip after a long quiet run is not punished as a storm.
"""

from __future__ import annotations

import random

from sro.queue import clock as clocks


class Backoff:
    def __init__(
        self,
        *,
        initial: float = 0.8,
        cap: float = 30.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        clock: clocks.Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.initial = initial
        self.cap = cap
        self.jitter = jitter
        self.reset_after = reset_after
        self._clock = clock or clocks.MonotonicClock()
        self._rng = rng or random.Random()
        self._current = 0.0
        self._last_failure: float | None = None

    def next(self) -> float:
        """The delay before the next attempt, counting this failure."""
        now = self._clock.now()
        if self._last_failure is not None and now - self._last_failure > self.reset_after:
            self._current = 0.0
        self._last_failure = now
        self._current = self.initial if self._current == 0 else min(self._current * 2, self.cap)
        return self._current * (1 + self.jitter * self._rng.random())

    def healthy(self) -> None:
        """Report a healthy stretch; resets the delay once it has lasted ``reset_after``."""
        if self._last_failure is not None and self._clock.now() - self._last_failure > self.reset_after:
            self._current = 0.0
            self._last_failure = None


class RelistBackoff:
    """How long to wait before relisting after a 410 Gone, counting the 410s in a row.

    The first expiry after a healthy watch relists at once: history moved on, that is
    normal, and the list is the cure. Another one before any watch has been healthy
    again means the cure is not working (a watch cache too small for the churn, a
    compaction racing every list): each further relist waits ``initial`` doubling up to
    ``cap``, the last ``jitter`` fraction of it drawn at random so many reflectors
    expiring together spread out, and never longer than ``cap``. A healthy watch (one
    that delivered an event, or closed normally) starts the count again. Without this a
    reflector whose every watch answers 410 lists the whole resource in a tight loop,
    which is exactly the load that makes the API server answer 410 again.
    """

    def __init__(
        self,
        *,
        initial: float = 0.8,
        cap: float = 30.0,
        jitter: float = 0.5,
        rng: random.Random | None = None,
    ) -> None:
        self.initial = initial
        self.cap = cap
        self.jitter = jitter
        self._rng = rng or random.Random()
        self.streak = 0
        """410s since the last healthy watch."""

    def next(self) -> float:
        """The delay before the relist this 410 calls for (0 for the first in a row)."""
        self.streak += 1
        if self.streak == 1:
            return 0.0
        base = min(self.initial * 2.0 ** min(self.streak - 2, 64), self.cap)
        return base * (1.0 - self.jitter * self._rng.random())

    def healthy(self) -> None:
        """A watch delivered events or closed normally: the next 410 relists at once."""
        self.streak = 0
