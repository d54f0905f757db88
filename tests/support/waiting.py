"""Waiting on a condition with a deadline, never on a fixed sleep.

Tests against a real cluster observe eventually-consistent state; a fixed ``sleep`` is
either too short (flaky) or too long (slow). ``wait_for`` polls a predicate until it
returns something truthy and fails with a message that says what was awaited and what
was last seen.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def _describe(last: object, error: BaseException | None) -> str:
    if error is not None:
        return f"last attempt raised {type(error).__name__}: {error}"
    text = repr(last)
    return f"last value: {text[:2000]}"


async def wait_for(
    predicate: Callable[[], T | Awaitable[T | None] | None],
    *,
    timeout: float,  # noqa: ASYNC109 - a deadline for polling, not for one awaited call
    interval: float = 0.2,
    message: str,
) -> T:
    """Calls ``predicate`` (sync or async) until it returns a truthy value, and returns that value.

    Exceptions raised by the predicate (a failed ``assert`` included) count as "not
    yet" (the object may not exist yet); the last one is reported at the deadline. Raises AssertionError with
    ``message`` after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    last: object = None
    error: BaseException | None = None
    while True:
        try:
            value = predicate()
            if inspect.isawaitable(value):
                value = await value
            last, error = value, None
            if value:
                return value
        except Exception as e:
            error = e
        if time.monotonic() >= deadline:
            raise AssertionError(f"{message} (not within {timeout:.1f}s; {_describe(last, error)})")
        await asyncio.sleep(interval)


def wait_for_sync(
    predicate: Callable[[], T | None],
    *,
    timeout: float,
    interval: float = 0.2,
    message: str,
) -> T:
    """``wait_for`` for synchronous code: same contract, blocking sleeps between attempts."""
    deadline = time.monotonic() + timeout
    last: object = None
    error: BaseException | None = None
    while True:
        try:
            value = predicate()
            last, error = value, None
            if value:
                return value
        except Exception as e:
            error = e
        if time.monotonic() >= deadline:
            raise AssertionError(f"{message} (not within {timeout:.1f}s; {_describe(last, error)})")
        time.sleep(interval)
