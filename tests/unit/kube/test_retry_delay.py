"""How long a retry waits (sro.kube.errors.retry_delay): the backoff, but never less than
the server's Retry-After, which is bounded."""

import pytest

from sro import errors
from sro.kube import errors as kerrors

pytestmark = pytest.mark.unit


def too_many(header: str | None, body_seconds: int | None = None) -> errors.ApiError:
    status: dict[str, object] = {"kind": "Status", "code": 429, "reason": "TooManyRequests"}
    if body_seconds is not None:
        status["details"] = {"retryAfterSeconds": body_seconds}
    return kerrors.from_status(status, code=429, retry_after=header)


def test_a_429_waits_at_least_its_retry_after() -> None:
    exc = too_many("7")
    assert isinstance(exc, errors.TooManyRequests)
    assert kerrors.retry_delay(exc, backoff=0.2, cap=60) == 7.0


def test_a_longer_backoff_wins_over_a_short_retry_after() -> None:
    assert kerrors.retry_delay(too_many("1"), backoff=4.5, cap=60) == 4.5


def test_retry_after_is_bounded() -> None:
    assert kerrors.retry_delay(too_many("86400"), backoff=0.2, cap=60) == 60.0


def test_the_body_retry_after_seconds_counts_when_there_is_no_header() -> None:
    assert kerrors.retry_delay(too_many(None, body_seconds=3), backoff=0.2, cap=60) == 3.0


def test_a_503_with_retry_after_is_honoured_too() -> None:
    exc = kerrors.from_response(503, b"overloaded", retry_after="5")
    assert isinstance(exc, errors.ServerError)
    assert kerrors.retry_delay(exc, backoff=0.4, cap=60) == 5.0


@pytest.mark.parametrize(
    "exc",
    [
        None,
        errors.TransportError("connection reset"),
        kerrors.from_response(500, b"boom"),
        too_many("not-a-number"),
        too_many("-3"),
    ],
)
def test_without_a_usable_retry_after_the_backoff_stands(exc: BaseException | None) -> None:
    assert kerrors.retry_delay(exc, backoff=1.25, cap=60) == 1.25
