"""One pass of a driver rollout: the node moves, drains, job checks and pod deletions it
collects (``sro.plan.upgrade`` decides them, ``upgrade_rollback`` for a halted rollout).

A move is one patch of the node: its phase label and record annotation (``upgrade_records``)
and, when the move cordons or uncordons it, ``spec.unschedulable``; every move asks for
the next pass at once, since the next phase may start right away.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from types import MappingProxyType

from sro.model import desired, times, views
from sro.plan import lifecycle, live_records, node_patches, upgrade_jobs
from sro.plan import upgrade_records as records


def elapsed(rec: records.Record, now: datetime) -> timedelta:
    since = times.parse(rec.since)
    return timedelta(0) if since is None else max(now - since, timedelta(0))


class Pass:
    """One pass over the selected nodes; collects changes, deletions and drains."""

    def __init__(self, sr_name: str, *, target: str, now: datetime) -> None:
        self.sr_name, self.target, self.now = sr_name, target, now
        self.changes: list[node_patches.NodeChange] = []
        self.drains: list[records.DrainRequest] = []
        self.checks: list[upgrade_jobs.JobCheck] = []
        self.delete: list[lifecycle.Deletion] = []
        self.wake: list[timedelta] = []
        self.records: dict[str, records.Record] = {}  # what this pass wrote, by node

    def move(
        self,
        node: views.NodeView,
        rec: records.Record,
        phase: str,
        *,
        reason: str = "",
        unschedulable: bool | None = None,
        previous: Mapping[str, str] | None = None,
        rollback_failed: bool = False,
    ) -> records.Record:
        cordoned = rec.cordoned if unschedulable is None else unschedulable
        new = records.Record(
            phase=phase,
            since=self.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            cordoned=cordoned,
            revision=self.target,
            reason=reason,
            previous=rec.previous if previous is None else MappingProxyType(dict(previous)),
            rollback_failed=rollback_failed,
        )
        value = None if phase == records.DONE else new.to_json()
        self.changes.append(
            node_patches.NodeChange(
                node=node.name,
                labels={records.label(self.sr_name): phase},
                annotations={records.annotation(self.sr_name): value},
                unschedulable=unschedulable,
            )
        )
        self.wake.append(timedelta(0))
        self.records[node.name] = new
        return new

    def pod_deletion(self, pod: views.PodView, why: str) -> None:
        ref = desired.ObjectRef(api_version="v1", kind="Pod", namespace=pod.namespace, name=pod.name)
        self.delete.append(lifecycle.Deletion(ref=ref, uid=pod.uid, reason=why))


def running(pods: Sequence[views.PodView]) -> Mapping[str, str]:
    """Each DaemonSet's revision hash among a node's outdated pods: what it ran so far."""
    return {
        p.owner_name: p.labels[live_records.REVISION_HASH]
        for p in pods
        if live_records.REVISION_HASH in p.labels
    }
