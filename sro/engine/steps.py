"""Where a reconcile's time goes: read, render, plan, execute, finish.

A pass at a thousand nodes that takes two seconds is waiting on something: the caches it
reads, the render, the planner's CPU, the API server's answers to its writes, or the
status write. Each step's time is handed to the metrics (``sro_reconcile_step_seconds``)
and logged at debug level with the key, so an on-call reader can tell which.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog

log = structlog.get_logger(__name__)

Note = Callable[[str, float], None]
COMPUTING = ("read", "render", "plan")


class Laps:
    """A stopwatch for one pass: ``lap(step)`` ends ``step`` and starts the next."""

    def __init__(self, note: Note | None = None) -> None:
        self._note = note
        self._last = time.monotonic()
        self.seconds: dict[str, float] = {}

    def lap(self, step: str) -> None:
        now = time.monotonic()
        spent = now - self._last
        self._last = now
        self.seconds[step] = self.seconds.get(step, 0.0) + spent
        if self._note is not None:
            self._note(step, spent)

    def computing(self) -> float:
        """Seconds of the steps that compute (read, render, plan) rather than wait on the
        API server's answers (execute, finish): what a pass costs whatever it finds."""
        return sum(self.seconds.get(step, 0.0) for step in COMPUTING)

    def said(self) -> None:
        """Log the pass's steps (debug)."""
        log.debug("pass timed", **{f"{k}_s": round(v, 4) for k, v in self.seconds.items()})
