"""Running a plan's writes in ordered waves, concurrently within each wave.

The plan orders its writes (namespace, CRDs, RBAC and accounts, config and services,
other kinds, workloads; deletions the other way round) because later ones need earlier
ones. Inside one wave nothing depends on anything else: at a thousand nodes, a state's
per-node pods or its node labels are a thousand independent requests, and sending them
one at a time made the operator, not the API server, the bottleneck. So each wave runs
with up to ``limit`` requests in flight, and the next starts when it is done.

A wave's work functions record their own failures; the only exception that escapes is
one that must end the reconcile (``errors.NotLeader``): it cancels the rest of the wave
and is raised as itself.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_LIMIT = 16
"""Requests in flight at once: what a 2-core API server absorbs without queueing them
(client-go's default burst is 10, controller-runtime operators commonly raise it to 30)."""


async def bounded(items: Iterable[T], run: Callable[[T], Awaitable[None]], *, limit: int) -> None:
    """``run(item)`` for every item, with at most ``limit`` running at once. Each call is
    made only once its turn comes, so a wave cut short leaves nothing half-started."""
    gate = asyncio.Semaphore(max(1, limit))

    async def one(item: T) -> None:
        async with gate:
            await run(item)

    try:
        async with asyncio.TaskGroup() as group:
            for item in items:
                group.create_task(one(item))
    except ExceptionGroup as failed:
        raise failed.exceptions[0] from None


async def in_waves(
    items: Iterable[T], *, wave: Callable[[T], Hashable], run: Callable[[T], Awaitable[None]], limit: int
) -> None:
    """Run ``run(item)`` for consecutive items of the same ``wave`` concurrently, wave after
    wave in the order the items come."""
    for _, group in itertools.groupby(items, key=wave):
        await bounded(group, run, limit=limit)
