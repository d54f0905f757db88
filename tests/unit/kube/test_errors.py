"""Turning API answers (Status bodies, in-stream ERROR events, other bodies) into typed errors."""

import json

import pytest

from sro import errors
from sro.kube import errors as kerrors
from sro.kube import http
from sro.plan import outcomes

pytestmark = pytest.mark.unit


def status(code: int, reason: str, **extra: object) -> bytes:
    body = {"kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": "m"}
    body.update(extra)
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (400, "BadRequest", errors.BadRequest),
        (401, "Unauthorized", errors.Unauthorized),
        (403, "Forbidden", errors.Forbidden),
        (404, "NotFound", errors.NotFound),
        (409, "AlreadyExists", errors.Conflict),
        (410, "Gone", errors.Expired),
        (422, "Invalid", errors.Invalid),
        (429, "TooManyRequests", errors.TooManyRequests),
        (500, "InternalError", errors.ServerError),
        (503, "ServiceUnavailable", errors.ServerError),
    ],
)
def test_each_status_code_becomes_its_error_class(code: int, reason: str, cls: type) -> None:
    err = kerrors.from_response(code, status(code, reason))
    assert type(err) is cls and err.code == code and err.reason == reason


def test_an_in_stream_expired_status_becomes_expired() -> None:
    err = kerrors.from_status({"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
    assert isinstance(err, errors.Expired) and "too old" in str(err)


def test_invalid_carries_the_field_causes() -> None:
    cause = {"field": "spec.x", "reason": "FieldValueInvalid", "message": "bad"}
    body = status(422, "Invalid", details={"causes": [cause]})
    err = kerrors.from_response(422, body)
    assert err.causes == (errors.Cause(field="spec.x", reason="FieldValueInvalid", message="bad"),)


def test_retry_after_comes_from_the_header_or_the_details() -> None:
    assert kerrors.from_response(429, status(429, "TooManyRequests"), retry_after="3").retry_after == 3.0
    body = status(429, "TooManyRequests", details={"retryAfterSeconds": 2})
    assert kerrors.from_response(429, body).retry_after == 2.0


def test_a_body_that_is_not_a_status_is_truncated_and_not_kept() -> None:
    secret = b"x" * 10_000
    err = kerrors.from_response(502, secret)
    assert isinstance(err, errors.ServerError)
    assert err.status == {} and len(str(err)) < 400


def test_transient_errors_are_marked_so() -> None:
    assert kerrors.from_response(503, b"").transient
    assert kerrors.from_response(409, status(409, "Conflict")).transient
    assert not kerrors.from_response(422, status(422, "Invalid")).transient


def test_a_500_for_a_patch_the_server_cannot_type_is_permanent_and_not_retried() -> None:
    message = (
        "failed to create typed patch object (sro-x/driver; apps/v1, Kind=DaemonSet): "
        '.spec.template.spec.containers[name="driver"].imagePullPolicyy: field not declared in schema'
    )
    err = kerrors.from_response(500, status(500, "InternalError", message=message))
    assert type(err) is errors.UntypedPatch and not err.transient
    assert not http._retryable(err)
    assert outcomes.is_permanent(err)
    other = kerrors.from_response(500, status(500, "InternalError"))
    assert type(other) is errors.ServerError and http._retryable(other) and not outcomes.is_permanent(other)
