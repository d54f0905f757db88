"""Driver upgrades node by node: which nodes get a new driver pod now, and how far each is.

The DaemonSets sro upgrades (``OnDelete``: see ``sro.hooks.upgrade``) never replace a pod
by themselves. When one's pod template changes, every node running a pod of an older
template generation (*outdated*) walks, one phase per pass::

    pending → cordoned → draining → replacing → validating → done
                  (any phase past its time bound, or a failed validation) → failed

* **cordoned**: ``spec.unschedulable: true`` in one patch with the node's
  ``resourceVersion`` and the record saying sro cordoned it; an administrator's cordon
  made meanwhile ends in a 409, and the next pass sees the node as someone else's;
* **draining**: the engine evicts the node's pods through the Eviction API (so
  PodDisruptionBudgets hold) and reports which are left (``Observed.drains``); past
  ``drain.timeoutSeconds`` the node fails and stays cordoned;
* **replacing**: the outdated operand pod is deleted (uid precondition); the DaemonSet
  controller makes the new one;
* **validating**: the node's later states run again (the walk resets them once the
  driver state stops being complete there) until every state is complete on the node:
  then it is uncordoned, if sro cordoned it, and **done**. A state that fails there fails
  the node.

Where a node is goes in its label ``<sr>.sro.dev/upgrade`` (for people and ``sro
status``) and in its annotation ``sro.dev/upgrade.<sr>`` (JSON: phase, since when,
whether sro cordoned it, the revision, why it failed): both are written in the patch
that moves it, so a restarted operator picks up every node where it was.

Budget: nodes started in a pass ≤ min(maxParallel - in progress, maxUnavailable -
unavailable now), where *unavailable* counts every selected node that is unschedulable
or NotReady, for whatever reason. A node someone else cordoned, or that is NotReady, is
*skipped*: never cordoned, drained, replaced or uncordoned by sro; it keeps its driver.
When ``maxFailedNodes`` nodes failed on the current revision the rollout halts: no node
starts until the revision changes (the spec or recipe changes again).

Until its turn a node keeps its previous driver pod, and that pod still counts for the
node's states (``replacing``), so the node stays complete and schedulable for workloads.
Everything here is pure; ``sro.engine`` carries out what it returns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sro.model import crd_limits, desired, progress, times, upgrade_policy, views
from sro.plan import lifecycle, node_patches
from sro.plan import observed as observed_
from sro.status import conditions, summary
from sro.status import events as events_
from sro.status.body import StatusBody, UpgradeStatus

LABEL = lifecycle.UPGRADE
PENDING, CORDONED, DRAINING, REPLACING, VALIDATING = (
    "pending",
    "cordoned",
    "draining",
    "replacing",
    "validating",
)
DONE, FAILED = "done", "failed"
PHASES = (PENDING, CORDONED, DRAINING, REPLACING, VALIDATING, DONE, FAILED)
IN_PROGRESS = frozenset({CORDONED, DRAINING, REPLACING, VALIDATING})
NEW_POD = frozenset({REPLACING, VALIDATING})
"""Phases in which only a pod of the current template counts for the node's states."""
REPLACE_TIMEOUT = timedelta(minutes=5)
"""How long an outdated pod may take to go once deleted (a stuck finalizer, a hung kubelet)."""
VALIDATE_TIMEOUT = timedelta(minutes=15)
"""How long the node's states may take to complete again on the new driver (a driver build
and load, then validation pods): past it the node fails with the state's own reason."""
DRAIN_POLL = timedelta(seconds=5)
"""How soon to try a drain again while pods are leaving or a PodDisruptionBudget says no."""


def label(sr_name: str) -> str:
    return lifecycle.label_prefix(sr_name) + LABEL


def annotation(sr_name: str) -> str:
    return lifecycle.upgrade_annotation(sr_name)


@dataclass(frozen=True, kw_only=True)
class Record:
    """What the node annotation keeps of a node's walk."""

    phase: str = ""
    since: str = ""
    cordoned: bool = False  # sro made the node unschedulable (and so may undo it)
    revision: str = ""
    reason: str = ""

    def to_json(self) -> str:
        body = {
            "phase": self.phase,
            "since": self.since,
            "cordoned": self.cordoned,
            "revision": self.revision,
        }
        if self.reason:
            body["reason"] = self.reason
        return json.dumps(body, sort_keys=True)


def record(node: views.NodeView, sr_name: str) -> Record:
    """The node's record (an unreadable one reads as none)."""
    try:
        raw = json.loads(node.annotations.get(annotation(sr_name), "") or "{}")
    except ValueError:
        raw = {}
    if not isinstance(raw, dict):
        raw = {}
    return Record(
        phase=str(raw.get("phase", "")),
        since=str(raw.get("since", "")),
        cordoned=raw.get("cordoned") is True,
        revision=str(raw.get("revision", "")),
        reason=str(raw.get("reason", "")),
    )


@dataclass(frozen=True, kw_only=True)
class DrainRequest:
    """Evict every pod on ``node`` but DaemonSet, mirror and sro's own pods (those
    carrying all of ``pod_selector``, when given); with ``force``, delete what eviction
    could not move."""

    node: str
    pod_selector: Mapping[str, str]
    delete_empty_dir_data: bool
    force: bool = False


@dataclass(frozen=True, kw_only=True)
class Upgrade:
    """This pass's part of the rollout; ``status`` is ``status.upgrade`` (None: none)."""

    node_changes: tuple[node_patches.NodeChange, ...] = ()
    delete: tuple[lifecycle.Deletion, ...] = ()
    drains: tuple[DrainRequest, ...] = ()
    status: UpgradeStatus | None = None
    halted: str = ""  # why the rollout halted (UpgradeFailed), "" while it may go on
    wake_in: timedelta | None = None


def replacing(sr_name: str, nodes: Mapping[str, views.NodeView]) -> frozenset[str]:
    """Nodes whose previous driver pod no longer counts (see the module docstring)."""
    key = label(sr_name)
    return frozenset(name for name, node in nodes.items() if node.labels.get(key) in NEW_POD)


def outdated(seen: observed_.Observed) -> Mapping[str, tuple[views.PodView, ...]]:
    """Node -> pods of owned ``OnDelete`` DaemonSets made from an older pod template."""
    by_uid = {
        live.uid: live
        for live in seen.objects.values()
        if live.ref.kind == "DaemonSet" and live.uid and live.update_strategy == lifecycle.ON_DELETE
    }
    found: dict[str, list[views.PodView]] = {}
    for pod in seen.pods:
        live = by_uid.get(pod.owner_uid) if pod.owner_kind == "DaemonSet" else None
        if live is None or pod.deleting or live.deleting or not pod.template_generation.isdigit():
            continue
        if int(pod.template_generation) < live.template_generation:
            found.setdefault(pod.node, []).append(pod)
    return {node: tuple(pods) for node, pods in found.items()}


def revision(seen: observed_.Observed) -> str:
    """The revision being rolled out: each upgraded DaemonSet and its template generation."""
    parts = sorted(
        f"{live.ref.name}@{live.template_generation}"
        for live in seen.objects.values()
        if live.ref.kind == "DaemonSet" and live.update_strategy == lifecycle.ON_DELETE and not live.deleting
    )
    text = ",".join(parts)
    return (
        text
        if len(text) <= crd_limits.UPGRADE_REVISION_MAX
        else text[: crd_limits.UPGRADE_REVISION_MAX - 1] + "…"
    )


def _elapsed(rec: Record, now: datetime) -> timedelta:
    since = times.parse(rec.since)
    return timedelta(0) if since is None else max(now - since, timedelta(0))


class _Pass:
    """One pass over the selected nodes; collects changes, deletions and drains."""

    def __init__(self, sr_name: str, *, target: str, now: datetime) -> None:
        self.sr_name, self.target, self.now = sr_name, target, now
        self.changes: list[node_patches.NodeChange] = []
        self.drains: list[DrainRequest] = []
        self.delete: list[lifecycle.Deletion] = []
        self.wake: list[timedelta] = []
        self.failed: list[tuple[str, str]] = []  # (node, why) of nodes failing in this pass

    def move(
        self,
        node: views.NodeView,
        rec: Record,
        phase: str,
        *,
        reason: str = "",
        unschedulable: bool | None = None,
    ) -> Record:
        cordoned = rec.cordoned if unschedulable is None else unschedulable
        new = Record(
            phase=phase,
            since=self.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            cordoned=cordoned,
            revision=self.target,
            reason=reason,
        )
        value = None if phase == DONE else new.to_json()
        self.changes.append(
            node_patches.NodeChange(
                node=node.name,
                labels={label(self.sr_name): phase},
                annotations={annotation(self.sr_name): value},
                unschedulable=unschedulable,
            )
        )
        self.wake.append(timedelta(0))
        if phase == FAILED:
            self.failed.append((node.name, reason))
        return new


def plan(
    wanted: desired.DesiredState,
    seen: observed_.Observed,
    walked: progress.Walk,
    *,
    now: datetime,
) -> Upgrade:
    """This pass's part of the rollout; see the module docstring."""
    sr, policy = wanted.sr_name, seen.upgrade_policy
    key = label(sr)
    old = outdated(seen)
    target = revision(seen)
    p = _Pass(sr, target=target, now=now)
    nodes = {name: seen.nodes.get(name) or views.NodeView(name=name) for name in wanted.nodes}
    records = {name: record(node, sr) for name, node in nodes.items()}
    phases: dict[str, str] = {}
    failing: list[tuple[str, str]] = []
    skipped: list[str] = []
    for name, node in nodes.items():
        rec, phase = records[name], node.labels.get(key, "")
        if phase in IN_PROGRESS:
            phase = _advance(
                p,
                node,
                rec,
                phase,
                seen=seen,
                walked=walked,
                old=old.get(name, ()),
                policy=policy,
                drained=seen.drains.get(name),
            )
        elif phase == FAILED and rec.revision == target:
            failing.append((name, rec.reason))
        elif phase == FAILED and name not in old:  # a later revision left nothing to do here
            phase = p.move(node, rec, DONE, unschedulable=False if rec.cordoned else None).phase
        elif name in old:
            if (node.unschedulable and not rec.cordoned) or not node.ready:
                skipped.append(name)
                phase = "skipped"
            else:
                phase = PENDING
        phases[name] = phase
    failing.extend(p.failed)
    failed = len(failing)
    halted = ""
    if failing and failed >= policy.max_failed_nodes:
        listed = ", ".join(f"{n} ({why})" for n, why in failing[:10])
        halted = f"upgrade to {target} halted after {failed} failed node(s): {listed}"
    elif pending := sorted(n for n, ph in phases.items() if ph == PENDING):
        in_progress = sum(1 for ph in phases.values() if ph in IN_PROGRESS)
        unavailable = sum(1 for n in nodes.values() if n.unschedulable or not n.ready)
        budget = min(
            policy.max_parallel - in_progress,
            policy.unavailable_budget(len(nodes)) - unavailable,
        )
        for name in pending[: max(budget, 0)]:
            node = nodes[name]  # unschedulable here only if sro cordoned it for an earlier revision
            p.move(node, records[name], CORDONED, unschedulable=None if node.unschedulable else True)
            phases[name] = CORDONED
    return Upgrade(
        node_changes=tuple(p.changes),
        delete=tuple(p.delete),
        drains=tuple(p.drains),
        status=_status(phases, target=target, skipped=skipped, failing=failing, halted=bool(halted)),
        halted=halted,
        wake_in=min(p.wake, default=None),
    )


def _advance(
    p: _Pass,
    node: views.NodeView,
    rec: Record,
    phase: str,
    *,
    seen: observed_.Observed,
    walked: progress.Walk,
    old: Sequence[views.PodView],
    policy: upgrade_policy.UpgradePolicy,
    drained: tuple[str, ...] | None,
) -> str:
    """One step of a node in progress; returns its phase after this pass."""
    elapsed = _elapsed(rec, p.now)
    if phase == CORDONED:
        return p.move(node, rec, DRAINING if policy.drain.enable else REPLACING).phase
    if phase == DRAINING:
        timeout = timedelta(seconds=policy.drain.timeout_seconds)
        if drained is not None and not drained:
            return p.move(node, rec, REPLACING).phase
        if elapsed >= timeout and not policy.drain.force:
            left = ", ".join(drained[:5]) if drained else "unknown"
            why = f"drain did not finish within {policy.drain.timeout_seconds}s; left: {left}"
            return p.move(node, rec, FAILED, reason=why[: crd_limits.FAILING_REASON_MAX]).phase
        d = policy.drain
        p.drains.append(
            DrainRequest(
                node=node.name,
                pod_selector=d.pod_selector,
                delete_empty_dir_data=d.delete_empty_dir_data,
                force=d.force and elapsed >= timeout,
            )
        )
        p.wake.append(DRAIN_POLL)
        return phase
    if phase == REPLACING:
        if not old:
            return p.move(node, rec, VALIDATING).phase
        if elapsed >= REPLACE_TIMEOUT:
            return p.move(node, rec, FAILED, reason=f"the outdated pod {old[0].name} did not go").phase
        for pod in old:
            ref = desired.ObjectRef(api_version="v1", kind="Pod", namespace=pod.namespace, name=pod.name)
            p.delete.append(
                lifecycle.Deletion(ref=ref, uid=pod.uid, reason=f"upgrading {node.name} to {p.target}")
            )
        p.wake.append(REPLACE_TIMEOUT - elapsed)
        return phase
    # VALIDATING: every state complete again on the new driver, or a failure.
    states = walked.nodes.get(node.name, {})
    if states and all(s.phase is progress.Phase.COMPLETE for s in states.values()):
        return p.move(node, rec, DONE, unschedulable=False if rec.cordoned else None).phase
    bad = next(((n, s) for n, s in states.items() if s.phase is progress.Phase.FAILED or s.stuck), None)
    if bad is not None or elapsed >= VALIDATE_TIMEOUT:
        why = f"{bad[0]} failed: {bad[1].reason}" if bad else f"not valid after {VALIDATE_TIMEOUT}"
        return p.move(node, rec, FAILED, reason=why[: crd_limits.FAILING_REASON_MAX]).phase
    p.wake.append(VALIDATE_TIMEOUT - elapsed)
    return phase


def _status(
    phases: Mapping[str, str],
    *,
    target: str,
    skipped: list[str],
    failing: list[tuple[str, str]],
    halted: bool,
) -> UpgradeStatus | None:
    counts = {ph: sum(1 for v in phases.values() if v == ph) for ph in (*PHASES, "skipped")}
    counts = {ph: n for ph, n in counts.items() if n}
    active = any(counts.get(ph) for ph in (PENDING, *IN_PROGRESS, FAILED))
    if not active and not counts.get(DONE):
        return None
    phase = "Halted" if halted else "InProgress" if active else "Done"
    cap = crd_limits.FAILING_NODES_MAX
    return {
        "phase": phase,
        "revision": target,
        "nodes": counts,
        "skipped": sorted(skipped)[:cap],
        "failingNodes": [{"node": n, "reason": why} for n, why in sorted(failing)[:cap]],
    }


def merge(
    base: Sequence[node_patches.NodeChange], extra: Sequence[node_patches.NodeChange]
) -> tuple[node_patches.NodeChange, ...]:
    """``base`` (the walk's labels and taints) with ``extra`` (this module's) folded in,
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


UPGRADE_FAILED = "UpgradeFailed"


def with_status(
    status: StatusBody, rollout: Upgrade, *, previous: Mapping[str, Any], generation: int, now: datetime
) -> StatusBody:
    """``status`` with ``status.upgrade``; Degraded ``UpgradeFailed`` while the rollout is
    halted (nothing else the walk says outranks it: no node may move until the spec does)."""
    if rollout.halted:
        status = summary.degraded(
            status, previous, reason=UPGRADE_FAILED, message=rollout.halted, generation=generation, now=now
        )
    if rollout.status is not None:
        status = status.copy()
        status["upgrade"] = rollout.status
    return status


def events(previous: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[events_.Event, ...]:
    """A Warning when the rollout halts (once: on the condition's change to UpgradeFailed)."""

    def reason(status: Mapping[str, Any]) -> str:
        found = conditions.find(status.get("conditions") or (), conditions.DEGRADED) or {}
        return str(found.get("reason", "")) if found.get("status") == "True" else ""

    if reason(current) != UPGRADE_FAILED or reason(previous) == UPGRADE_FAILED:
        return ()
    found = conditions.find(current.get("conditions") or (), conditions.DEGRADED) or {}
    return (events_.Event(type="Warning", reason=UPGRADE_FAILED, message=str(found.get("message", ""))),)
