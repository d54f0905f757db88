"""The harness's waiting helpers: what they return, when they give up, and what they report."""

from __future__ import annotations

import itertools

import pytest

from support.waiting import wait_for, wait_for_sync

pytestmark = pytest.mark.unit


def test_wait_for_sync_returns_the_first_truthy_value() -> None:
    values = iter([None, 0, "", "ready", "later"])
    assert wait_for_sync(lambda: next(values), timeout=5, interval=0, message="m") == "ready"


def test_wait_for_sync_treats_exceptions_as_not_yet() -> None:
    calls = itertools.count()

    def flaky() -> int:
        n = next(calls)
        if n < 2:
            raise KeyError("not there yet")
        return n

    assert wait_for_sync(flaky, timeout=5, interval=0, message="m") == 2


def test_wait_for_sync_fails_with_the_message_and_the_last_value_at_the_deadline() -> None:
    with pytest.raises(AssertionError) as failure:
        wait_for_sync(lambda: [], timeout=0.05, interval=0.01, message="pods Ready")
    assert "pods Ready" in str(failure.value)
    assert "last value: []" in str(failure.value)


def test_wait_for_sync_reports_the_last_exception_at_the_deadline() -> None:
    def missing() -> None:
        raise LookupError("pod p not found")

    with pytest.raises(AssertionError, match="LookupError: pod p not found"):
        wait_for_sync(missing, timeout=0.05, interval=0.01, message="pod")


async def test_wait_for_awaits_an_async_predicate() -> None:
    values = iter([False, False, 7])

    async def predicate() -> int | bool:
        return next(values)

    assert await wait_for(predicate, timeout=5, interval=0, message="m") == 7


async def test_wait_for_accepts_a_sync_predicate_and_gives_up_with_the_message() -> None:
    assert await wait_for(lambda: "yes", timeout=1, message="m") == "yes"
    with pytest.raises(AssertionError, match="never true"):
        await wait_for(lambda: None, timeout=0.05, interval=0.01, message="never true")
