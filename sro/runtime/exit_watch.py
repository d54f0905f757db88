"""A process that has decided to exit does, and says what held it up.

Losing the Lease ends ``sro run`` with exit 1: nothing but that exit gets a leader that
lost its Lease restarted as a standby. Shutdown cancels the workers and closes every
watch, the probe server and the session, which takes well under a second. If any of it
hangs (a task that outlives its cancellation, a thread that never returns, a blocked
event loop), the process would stay up for good, neither leading nor standing by.

So once the process must exit, a deadline runs on a thread of its own (it fires even
while the event loop is blocked). When it passes, the process logs the stack of every
asyncio task still pending, writes every thread's stack to stderr (``faulthandler``) and
exits 1 at once. The dump names what held the shutdown up.
"""

from __future__ import annotations

import asyncio
import faulthandler
import io
import os
import sys
import threading

import structlog

log = structlog.get_logger(__name__)

EXIT_CODE = 1
"""A stalled exit counts as a failure: the supervisor restarts the process."""


class ExitWatch:
    """Arm once the process must exit; ``disarm`` if it is to live on after all (tests)."""

    def __init__(self) -> None:
        self._timer: threading.Timer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def arm(self, *, seconds: float, why: str) -> None:
        """Exit the process ``seconds`` from now unless it has exited by then (the first
        call counts; later calls keep the earlier deadline)."""
        if self._timer is not None:
            return
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._timer = threading.Timer(seconds, self._expire, kwargs={"seconds": seconds, "why": why})
        self._timer.name = "sro-exit-watch"
        self._timer.daemon = True  # a process that exits in time is not held up by it
        self._timer.start()

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self, *, seconds: float, why: str) -> None:
        try:
            log.error(
                "exit stalled: exiting now",
                why=why,
                seconds=seconds,
                tasks=pending_stacks(self._loop),
            )
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
            sys.stderr.flush()
        finally:
            os._exit(EXIT_CODE)


def pending_stacks(loop: asyncio.AbstractEventLoop | None) -> list[str]:
    """The stack of every task of ``loop`` not yet done, one text each (read from another
    thread while the loop may be running: a best effort for a report, never raises)."""
    if loop is None:
        return []
    try:
        tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    except RuntimeError:  # the task set changed while read, every retry
        return ["<tasks could not be read>"]
    stacks = []
    for task in tasks:
        out = io.StringIO()
        try:
            task.print_stack(file=out)
        except Exception as exc:  # a frame went away while read
            out.write(f"{task.get_name()}: <stack unreadable: {type(exc).__name__}>")
        stacks.append(out.getvalue())
    return stacks
