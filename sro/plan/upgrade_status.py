"""What a driver upgrade says: ``status.upgrade``, the Degraded condition and its Events.

The walk (``sro.plan.upgrade``) and the rollback (``sro.plan.upgrade_rollback``) decide;
this module only words it, so what an administrator reads is worded in one place:
``status.upgrade`` counts the nodes in each phase, and a halted rollout is Degraded
``UpgradeFailed`` (naming the revision, the failed nodes and why, and what was rolled
back) with a Warning Event when it halts and another when the rollback is over.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sro.model import crd_limits
from sro.plan import node_patches
from sro.plan import upgrade_records as records
from sro.status import conditions, summary
from sro.status import events as events_
from sro.status.body import StatusBody, UpgradeStatus

UPGRADE_FAILED = "UpgradeFailed"
ROLLED_BACK_EVENT = "UpgradeRolledBack"
SKIPPED = "skipped"
HALTED, ROLLED_BACK = "Halted", "RolledBack"


def status(
    phases: Mapping[str, str],
    *,
    target: str,
    skipped: Sequence[str],
    failing: Sequence[tuple[str, str]],
    halted: bool,
    rolled_back: bool = False,
) -> UpgradeStatus | None:
    """``status.upgrade`` from each node's phase this pass (None: no rollout to speak of);
    ``rolled_back``: halted, and every failed node that can go back is back."""
    counts = {ph: sum(1 for v in phases.values() if v == ph) for ph in (*records.PHASES, SKIPPED)}
    counts = {ph: n for ph, n in counts.items() if n}
    active = any(
        counts.get(ph) for ph in (records.PENDING, *records.IN_PROGRESS, records.FAILED, records.ROLLING_BACK)
    )
    if not active and not counts.get(records.DONE) and not counts.get(records.ROLLED_BACK):
        return None
    phase = (ROLLED_BACK if rolled_back else HALTED) if halted else "InProgress" if active else "Done"
    cap = crd_limits.FAILING_NODES_MAX
    return {
        "phase": phase,
        "revision": target,
        "nodes": counts,
        "skipped": sorted(skipped)[:cap],
        "failingNodes": [{"node": n, "reason": why} for n, why in sorted(failing)[:cap]],
    }


def halted_message(
    target: str,
    failing: Sequence[tuple[str, str]],
    *,
    rolled: Sequence[str],
    unkept: Iterable[str] = (),
) -> str:
    """The Degraded message of a halted rollout: revision, nodes and why, what went back,
    and the drivers whose previous template is gone (nothing to roll back to)."""
    listed = ", ".join(f"{n} ({why})" for n, why in list(failing)[:10])
    text = f"upgrade to {target} halted after {len(failing)} failed node(s): {listed}"
    if rolled:
        text += f"; rolled back to the previous revision: {', '.join(sorted(rolled)[:10])}"
    if gone := sorted(unkept):
        names = ", ".join(gone[:10])
        text += f"; no ControllerRevision left of the previous template of {names}: not rolled back"
    return text[: crd_limits.CONDITION_MESSAGE_MAX]


def merge(
    base: Sequence[node_patches.NodeChange], extra: Sequence[node_patches.NodeChange]
) -> tuple[node_patches.NodeChange, ...]:
    """``base`` (the walk's labels and taints) with ``extra`` (the upgrade's) folded in,
    one change per node, by node name."""
    by_node = {c.node: c for c in base}
    for change in extra:
        first = by_node.get(change.node)
        if first is None:
            by_node[change.node] = change
            continue
        by_node[change.node] = node_patches.NodeChange(
            node=change.node,
            labels={**first.labels, **change.labels},
            annotations={**first.annotations, **change.annotations},
            taints=first.taints,
            unschedulable=change.unschedulable,
        )
    return tuple(sorted(by_node.values(), key=lambda c: c.node))


def with_status(
    body: StatusBody,
    *,
    halted: str,
    upgrade: UpgradeStatus | None,
    previous: Mapping[str, Any],
    generation: int,
    now: datetime,
) -> StatusBody:
    """``body`` with ``status.upgrade``; Degraded ``UpgradeFailed`` while the rollout is
    halted (nothing else the walk says outranks it: no node may move until the spec does)."""
    if halted:
        body = summary.degraded(
            body, previous, reason=UPGRADE_FAILED, message=halted, generation=generation, now=now
        )
    if upgrade is not None:
        body = body.copy()
        body["upgrade"] = upgrade
    return body


def events(previous: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[events_.Event, ...]:
    """A Warning when the rollout halts (once: on the condition's change to UpgradeFailed),
    and another when its failed nodes are all back on the previous revision."""

    def reason(status_: Mapping[str, Any]) -> str:
        found = conditions.find(status_.get("conditions") or (), conditions.DEGRADED) or {}
        return str(found.get("reason", "")) if found.get("status") == "True" else ""

    def phase(status_: Mapping[str, Any]) -> str:
        return str((status_.get("upgrade") or {}).get("phase", ""))

    found = conditions.find(current.get("conditions") or (), conditions.DEGRADED) or {}
    message = str(found.get("message", ""))
    out: list[events_.Event] = []
    if reason(current) == UPGRADE_FAILED and reason(previous) != UPGRADE_FAILED:
        out.append(events_.Event(type="Warning", reason=UPGRADE_FAILED, message=message))
    if phase(current) == ROLLED_BACK and phase(previous) != ROLLED_BACK:
        out.append(events_.Event(type="Warning", reason=ROLLED_BACK_EVENT, message=message))
    return tuple(out)
