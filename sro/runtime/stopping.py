"""Stopping the manager: SIGTERM and SIGINT ask for it, and a wait gives way to it.

Apart from ``sro.runtime.manager`` because neither knows anything of the manager: one
installs a callback on the loop's signals, the other awaits something unless an event
comes first.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable
from typing import Any


def on_signals(stop: Callable[[], None]) -> Callable[[], None]:
    """Call ``stop`` on SIGTERM and SIGINT; returns what puts the handlers back."""
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass  # not the main thread (tests): stop() is called directly

    def restore() -> None:
        for sig in installed:
            loop.remove_signal_handler(sig)

    return restore


async def unless(stopped: asyncio.Event, awaitable: Awaitable[Any]) -> bool:
    """Await ``awaitable`` unless ``stopped`` is set first; True if it completed, and what
    it raised if it failed (a failure must never pass for a stop)."""
    task = asyncio.ensure_future(awaitable)
    stop = asyncio.ensure_future(stopped.wait())
    try:
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if task.done() and not task.cancelled():
        task.result()  # raises what the awaitable raised
        return True
    return False
