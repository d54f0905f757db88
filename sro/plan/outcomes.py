"""What the API server made of the engine's writes, as the planner reads it back.

The engine executes a plan and reports each write the API server (or the network) did not
take as a ``Failure``; ``sro.plan.finish`` folds them into the final status. Whether a
failure is worth retrying unchanged is decided here, once (contract section 5): a
*permanent* refusal (400, 404 for a kind, 422, 403 except for a new namespace's service
account) blocks its state; a *transient* one (no answer, 409, 429, 5xx) is retried with
backoff and shown.

Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from sro import errors
from sro.errors import Location
from sro.model import desired


@dataclass(frozen=True, kw_only=True)
class Failure:
    """One write the API server (or the network) did not take."""

    state: str
    ref: desired.ObjectRef | None
    error: errors.SroError
    dry_run: bool = False
    source: Location | None = None  # the recipe file and line the object came from

    @property
    def permanent(self) -> bool:
        return is_permanent(self.error)

    @property
    def key(self) -> str:
        """Which write failed (its state, or ``node NAME``, and its object), the same in
        every pass that tries it: what ``finish.Transient`` follows from pass to pass."""
        return f"{self.state}\x00{self.ref}"

    def describe(self) -> str:
        what = f"{self.ref}" if self.ref is not None else "node"
        verb = "refused (dry-run)" if self.dry_run else "failed"
        where = f"{self.source}: " if self.source is not None else ""
        return f"{where}{self.state}: {what} {verb}: {self.error}"


def is_permanent(error: BaseException) -> bool:
    """Whether retrying the same write unchanged cannot succeed (contract section 5)."""
    if isinstance(error, errors.Forbidden):
        text = str(error).lower()
        # A new namespace's service account appears a moment after the namespace.
        return not ("serviceaccount" in text.replace(" ", "") and "not found" in text)
    if isinstance(error, errors.ApiError):
        return not error.transient
    return not isinstance(error, errors.TransportError)
