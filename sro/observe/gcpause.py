"""How long each collection of the cyclic garbage collector held the process.

A collection holds the GIL from start to end, in whichever thread set it off (the
planner's as often as the loop's), so the event loop waits through it like through any
other stall. ``sro.runtime.heap`` keeps collections rare and freezes what the caches held
when they first listed; what a large fleet's convergence makes afterwards is not frozen,
and a full collection then walks all of it. Whether a stall of the loop was such a
collection or something else is what someone looking at a stall asks first, so each
collection is timed, and the loop's probe (``sro.observe.looplag``) reports the ones of
its interval beside the stall.

The callback only reads the clock and appends to a deque: it runs inside the collector,
in any thread, so it takes no lock and logs nothing. Collections never overlap (each
holds the GIL and the collector's own guard), so one start time is enough.
"""

from __future__ import annotations

import gc
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

KEPT = 4096
"""Collections held until the probe takes them; older ones are dropped past this (the
probe takes them four times a second, so only a loop stalled for minutes loses any)."""


@dataclass(frozen=True, slots=True)
class Pause:
    generation: int
    seconds: float


class Pauses:
    """Times every collection while installed (``install``/``remove``, or ``with``)."""

    def __init__(self) -> None:
        self._started = 0.0
        self._done: deque[Pause] = deque(maxlen=KEPT)

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        now = time.perf_counter()
        if phase == "start":
            self._started = now
        elif self._started:
            self._done.append(Pause(generation=int(info["generation"]), seconds=now - self._started))
            self._started = 0.0

    def take(self) -> list[Pause]:
        """The collections finished since the last ``take``, oldest first."""
        taken: list[Pause] = []
        while True:
            try:
                taken.append(self._done.popleft())  # atomic beside the callback's append
            except IndexError:
                return taken

    def install(self) -> Pauses:
        if self not in gc.callbacks:
            gc.callbacks.append(self)
        return self

    def remove(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)
        self._started = 0.0

    def __enter__(self) -> Pauses:
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.remove()
