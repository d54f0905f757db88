"""``metav1.Condition`` values for the SpecialResource status: Ready, Progressing, Degraded.

The one rule that matters: ``lastTransitionTime`` changes only when a condition's status
flips. A reason or message change keeps the previous time, so recomputing the status from
an unchanged world yields a byte-identical status and no write. Conditions are always
listed in the same order (Ready, Progressing, Degraded).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sro.model import crd_limits
from sro.status.body import ConditionBody

READY = "Ready"
PROGRESSING = "Progressing"
DEGRADED = "Degraded"
ORDER = (READY, PROGRESSING, DEGRADED)
MESSAGE_MAX = crd_limits.CONDITION_MESSAGE_MAX  # the CRD's bound on a condition message

# Reasons (CamelCase, contract section 1).
ALL_STATES_COMPLETE = "AllStatesComplete"
STATE_PROGRESSING = "StateProgressing"
STATE_FAILED = "StateFailed"
NO_MATCHING_NODES = "NoMatchingNodes"
UNMANAGED = "Unmanaged"
REMOVED = "Removed"
AS_EXPECTED = "AsExpected"
BUILDING = "Building"  # an image a kernel group needs is being built in the cluster
BUILD_FAILED = "BuildFailed"
RECONCILE_ERROR = "ReconcileError"  # a pass failed on an exception no step expected
ERROR_REASONS = frozenset(
    {
        "RecipeNotFound",
        "RecipeInvalid",
        "TemplateError",
        "ApplyFailed",
        STATE_FAILED,
        "DependencyMissing",
        "DependencyCycle",
        "ConflictingNodeSelector",
        "NamespaceInUse",
        "ImageMissing",
        "RegistryUnavailable",
        BUILD_FAILED,
        "UpgradeFailed",
        RECONCILE_ERROR,
    }
)


@dataclass(frozen=True, kw_only=True)
class Condition:
    type: str
    status: bool
    reason: str
    message: str = ""


def timestamp(now: datetime) -> str:
    """RFC 3339 in UTC with second precision, as the API server writes times."""
    if now.tzinfo is not None:
        now = now.astimezone(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def _clip(message: str) -> str:
    return message if len(message) <= MESSAGE_MAX else message[: MESSAGE_MAX - 3] + "..."


def _status(value: bool) -> str:
    return "True" if value else "False"


def merge(
    previous: Sequence[Mapping[str, Any]], wanted: Sequence[Condition], *, generation: int, now: datetime
) -> list[ConditionBody]:
    """The condition list to write: ``wanted``, with each previous transition time kept
    unless that condition's status flipped (or it is new)."""
    before = {str(c.get("type", "")): c for c in previous}
    order = {name: i for i, name in enumerate(ORDER)}
    result: list[ConditionBody] = []
    for condition in sorted(wanted, key=lambda c: (order.get(c.type, len(ORDER)), c.type)):
        status = _status(condition.status)
        old = before.get(condition.type)
        if old is not None and old.get("status") == status and old.get("lastTransitionTime"):
            since = str(old["lastTransitionTime"])
        else:
            since = timestamp(now)
        result.append(
            {
                "type": condition.type,
                "status": status,
                "reason": condition.reason,
                "message": _clip(condition.message),
                "lastTransitionTime": since,
                "observedGeneration": generation,
            }
        )
    return result


def find(conditions: Sequence[Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    """The condition of type ``kind`` in a status's list, if any."""
    return next((c for c in conditions if c.get("type") == kind), None)


def triple(
    *, ready: tuple[bool, str, str], progressing: tuple[bool, str, str], degraded: tuple[bool, str, str]
) -> tuple[Condition, ...]:
    """The three conditions from (status, reason, message) each."""
    return tuple(
        Condition(type=kind, status=value[0], reason=value[1], message=value[2])
        for kind, value in zip(ORDER, (ready, progressing, degraded), strict=True)
    )
