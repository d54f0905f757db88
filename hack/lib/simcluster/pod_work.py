"""The one worker loop devsim's pod queues share: take a pod, act on it, and on any
failure say so and queue it again a second later, so a busy API server delays the
simulated kubelet but never makes it forget a pod."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("devsim")

PodKey = tuple[str, str, str]  # namespace, name, uid


async def worker(
    queue: asyncio.Queue[PodKey],
    act: Callable[[str, str, str], Awaitable[None]],
    *,
    failed: str,
    done: Callable[[str], None] | None = None,
) -> None:
    """Run ``act(namespace, name, uid)`` for each queued pod, forever; ``done(uid)`` after
    it succeeds; ``failed`` names the act in the log line of a retry."""
    while True:
        namespace, name, uid = await queue.get()
        try:
            await act(namespace, name, uid)
        except Exception:
            log.exception("pod %s/%s: %s; retrying", namespace, name, failed)
            await asyncio.sleep(1)
            queue.put_nowait((namespace, name, uid))
            continue
        if done is not None:
            done(uid)
