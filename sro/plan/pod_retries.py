"""Failed per-node and cluster-wide pods: recreated with backoff, and counted meanwhile.

A pod that failed is deleted so it runs again, after 10 s, then twice as long for each
further failure, up to 5 minutes; the bookkeeping (``observed.Retry``) lives in the
engine's memory and keeps the state Failed while the replacement runs (``walk``). A pod
that succeeds forgets its failures.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType

from sro.model import desired, progress
from sro.plan import lifecycle, readiness
from sro.plan import observed as observed_

BACKOFF_BASE = timedelta(seconds=10)
BACKOFF_MAX = timedelta(minutes=5)


def backoff(attempts: int) -> timedelta:
    """Delay before recreating a pod that failed ``attempts`` times (1 → 10 s, doubling)."""
    doublings = min(max(attempts - 1, 0), 16)  # 10 s << 16 is far past the cap already
    return min(BACKOFF_BASE * (1 << doublings), BACKOFF_MAX)


@dataclass(frozen=True, kw_only=True)
class Retries:
    """Failed pods to recreate now, the bookkeeping to keep, and when to look again."""

    delete: tuple[lifecycle.Deletion, ...]
    records: Mapping[desired.ObjectRef, observed_.Retry]
    wake_in: timedelta | None


_PHASE = operator.attrgetter("phase")
_NONE = Retries(delete=(), records=MappingProxyType({}), wake_in=None)


def retries(
    wanted: desired.DesiredState, seen: observed_.Observed, walked: progress.Walk, *, now: datetime
) -> Retries:
    """Recreate failed Pods with backoff; a Pod that succeeds forgets its failures."""
    if not seen.retries and (
        "Failed" not in map(_PHASE, seen.pods)  # at C speed: thousands of pods, every pass
        or not any(p.phase == "Failed" and not p.deleting for p in seen.pods)
    ):
        return _NONE  # nothing failed and nothing is counted: every pass of a healthy fleet
    delete: list[lifecycle.Deletion] = []
    records: dict[desired.ObjectRef, observed_.Retry] = {}
    wake: list[timedelta] = []
    for obj in wanted.objects:
        if obj.kind != "Pod":
            continue
        ref = walked.ref(obj)
        pod, record = seen.pod(ref), seen.retries.get(ref)
        if pod is None or pod.phase != "Failed" or pod.deleting:
            if record is not None and (pod is None or pod.phase != "Succeeded"):
                records[ref] = record  # keep counting while the recreated pod runs
            continue
        if obj.node is not None and not walked.nodes.get(obj.node, {}).get(obj.state, progress.PENDING).open:
            continue  # its state closed on that node: the pod is deleted as not open
        if record is None or record.pod_uid != pod.uid:
            attempts = (record.attempts if record else 0) + 1
            record = observed_.Retry(
                pod_uid=pod.uid, failed_at=now, attempts=attempts, reason=readiness.failure_reason(pod)
            )
        records[ref] = record
        due = record.failed_at + backoff(record.attempts)
        if now >= due:
            reason = f"recreating failed pod (attempt {record.attempts + 1})"
            delete.append(lifecycle.Deletion(ref=ref, uid=pod.uid, reason=reason))
        else:
            wake.append(due - now)
    return Retries(delete=tuple(delete), records=MappingProxyType(records), wake_in=min(wake, default=None))
