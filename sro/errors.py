"""Every error sro raises on purpose, in one tree.

Callers decide what to do by class, never by parsing messages::

    SroError
    ├── ApiError                    the API server answered with an error status
    │   ├── BadRequest              400
    │   ├── Unauthorized            401
    │   ├── Forbidden               403
    │   ├── NotFound                404
    │   ├── Conflict                409 (optimistic concurrency, or an apply conflict)
    │   ├── Expired                 410, as an HTTP status or as an in-stream ERROR event
    │   ├── Invalid                 422, with the server's field causes
    │   ├── TooManyRequests         429, with Retry-After
    │   ├── ServerError             5xx
    │   └── UntypedPatch            a 500 that no retry can fix: a patch the server cannot
    │                               type (a field not declared in the schema)
    ├── TransportError              no answer at all (connection refused, reset, timeout)
    ├── ForeignObject               an object sro would write exists and is not its own
    ├── UsageError                  sro was asked wrongly: a kubeconfig or context that is
    │                               not there (the command exits 2, like a bad flag)
    ├── RecipeError                 something wrong with a recipe or its inputs
    │   ├── RecipeNotFound
    │   ├── RecipeInvalid           structure, YAML, objects, annotations, state graph
    │   │   └── ValuesInvalid       the merged ``set`` breaks the recipe's values schema
    │   └── TemplateError           Jinja2 syntax, undefined value, sandbox, limits
    └── Terminal                    wraps an error that retrying cannot fix

    NotLeader                       a write refused before it was sent: this process does
                                    not hold a fresh lease (not an SroError on purpose:
                                    no code that sorts write failures may catch it; it
                                    ends the reconcile)

``sro.kube.errors`` alone turns HTTP responses into ``ApiError`` subclasses. Recipe
errors carry the file and line so messages can point at them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class SroError(Exception):
    """Root of every error sro raises on purpose."""


@dataclass(frozen=True, kw_only=True)
class Cause:
    """One field-level cause from a Status body (``details.causes``)."""

    field: str
    reason: str
    message: str


class ApiError(SroError):
    """The API server answered with an error status.

    ``status`` is the Status body when the server sent one (never an arbitrary body:
    those may hold secrets), ``code`` the HTTP code, ``reason`` the Status reason.
    """

    code: int = 0

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        reason: str = "",
        status: dict[str, Any] | None = None,
        causes: tuple[Cause, ...] = (),
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.reason = reason
        self.status = status or {}
        self.causes = causes
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        """Whether the same request may succeed later without any change."""
        return False

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}" if self.reason else f"{self.code}: {self.message}"


class BadRequest(ApiError):
    code = 400


class Unauthorized(ApiError):
    code = 401


class Forbidden(ApiError):
    code = 403


class NotFound(ApiError):
    code = 404


class Conflict(ApiError):
    code = 409

    @property
    def transient(self) -> bool:
        return True


class Expired(ApiError):
    """The requested resource version is too old: relist."""

    code = 410


class Invalid(ApiError):
    code = 422


class TooManyRequests(ApiError):
    code = 429

    @property
    def transient(self) -> bool:
        return True


class ServerError(ApiError):
    code = 500

    @property
    def transient(self) -> bool:
        return True


class UntypedPatch(ApiError):
    """The API server's 500 for an apply it cannot turn into a typed patch ("failed to
    create typed patch object ... field not declared in schema"): the same body fails the
    same way every time, so it is reported at once, never retried."""

    code = 500


class ForeignObject(SroError):
    """An object a recipe wants exists and was not made by this SpecialResource (no owner
    reference to it): sro never adopts one, so the write is refused for good."""


class UsageError(SroError):
    """A mistake in how sro was started, found after the flags were parsed: a kubeconfig
    that is missing or names no usable context. ``sro`` exits 2 with one line, as argparse
    does for a bad flag."""


class TransportError(SroError):
    """The request got no HTTP answer: connection refused or reset, or a timeout."""

    @property
    def transient(self) -> bool:
        return True


@dataclass(frozen=True, kw_only=True)
class Location:
    """Where in a recipe something went wrong; line is 1-based, 0 when unknown."""

    file: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


class RecipeError(SroError):
    """Something is wrong with a recipe or with what it renders to.

    ``reason`` is the status condition reason this error maps to.
    """

    reason = "RecipeInvalid"

    def __init__(self, message: str, *, location: Location | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message


class RecipeNotFound(RecipeError):
    reason = "RecipeNotFound"


class RecipeInvalid(RecipeError):
    reason = "RecipeInvalid"


class ValuesInvalid(RecipeInvalid):
    """A SpecialResource's merged ``set`` breaks its recipe's ``values.schema.json``.

    ``sr`` names the SpecialResource and ``path`` the offending value inside ``set``
    (empty for the whole), so ``sro lint`` can point at the key's line in the file.
    """

    def __init__(
        self,
        message: str,
        *,
        location: Location | None = None,
        sr: str = "",
        path: tuple[str | int, ...] = (),
    ) -> None:
        super().__init__(message, location=location)
        self.sr = sr
        self.path = path


class TemplateError(RecipeError):
    reason = "TemplateError"


@dataclass
class RecipeErrors(SroError):
    """Several recipe errors found in one pass (``sro lint`` reports them all)."""

    errors: list[RecipeError] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)


class Terminal(SroError):
    """Wraps an error that retrying cannot fix: record it, do not requeue."""

    def __init__(self, cause: BaseException, *, reason: str = "") -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.reason = reason


class NotLeader(Exception):
    """A mutating request was refused before it was sent: this process does not hold the
    Lease, or has not renewed it within the renew deadline (a standby may be taking over).

    Deliberately outside ``SroError``: the engine sorts ``SroError``s into write failures
    and goes on, and a fenced write must instead end the reconcile at once.
    """
