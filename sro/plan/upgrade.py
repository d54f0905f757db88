"""Driver upgrades node by node: which nodes get a new driver pod now, and how far each is.

The DaemonSets sro upgrades (``OnDelete``: see ``sro.hooks.upgrade``) never replace a pod
by themselves. When one's pod template changes, every node running a pod of an older
template (*outdated*, ``upgrade_records.outdated``) walks, one phase per pass::

    pending → cordoned → waiting-for-jobs → draining → replacing → validating → done
                  (any phase past its time bound, or a failed validation) → failed
    failed → rolling-back → rolled-back            (autoRollback: ``upgrade_rollback``)

* **cordoned**: ``spec.unschedulable: true`` in one patch with the node's
  ``resourceVersion`` and the record saying sro cordoned it (and which driver revision
  the node ran: what a rollback goes back to); an administrator's cordon made meanwhile
  ends in a 409, and the next pass sees the node as someone else's;
* **waiting-for-jobs** (only with ``waitForCompletion``): the node waits while pods of
  its selector run there, up to its timeout (``upgrade_jobs``);
* **draining**: the engine evicts the node's pods through the Eviction API (so
  PodDisruptionBudgets hold) and reports which are left (``Observed.drains``); past
  ``drain.timeoutSeconds`` the node fails and stays cordoned;
* **replacing**: the outdated operand pod is deleted (uid precondition); the DaemonSet
  controller makes the new one;
* **validating**: the node's later states run again (the walk resets them once the
  driver state stops being complete there) until every state is complete on the node:
  then it is uncordoned, if sro cordoned it, and **done**. A state that fails there fails
  the node.

Where a node is goes in its label and annotation (``upgrade_records``), written in the
patch that moves it, so a restarted operator picks up every node where it was.

Budget: nodes started in a pass ≤ min(maxParallel - in progress, maxUnavailable -
unavailable now), where *unavailable* counts every selected node that is unschedulable
or NotReady, for whatever reason. A node someone else cordoned, or that is NotReady, is
*skipped*: never cordoned, drained, replaced or uncordoned by sro; it keeps its driver.
Readiness wakes no pass, so while a NotReady node is skipped or holds the budget back,
the walk looks again every ``READY_POLL``. When ``maxFailedNodes`` nodes failed on the
current revision the rollout halts: no node starts until the revision changes (the spec
or recipe changes again); with ``autoRollback`` the failed nodes whose driver was
replaced go back to their previous one (``upgrade_rollback``), and count as failed until
then.

Until its turn a node keeps its previous driver pod, and that pod still counts for the
node's states (``replacing``), so the node stays complete and schedulable for workloads.
Everything here is pure; ``sro.engine`` carries out what it returns, and
``upgrade_status`` words it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType

from sro.model import crd_limits, desired, progress, upgrade_policy, views
from sro.plan import lifecycle, node_patches, upgrade_jobs, upgrade_pass, upgrade_status
from sro.plan import observed as observed_
from sro.plan import upgrade_records as records
from sro.plan import upgrade_rollback as rollback
from sro.status.body import UpgradeStatus

REPLACE_TIMEOUT = timedelta(minutes=5)
"""How long an outdated pod may take to go once deleted (a stuck finalizer, a hung kubelet)."""
VALIDATE_TIMEOUT = timedelta(minutes=15)
"""How long the node's states may take to complete again on the new driver (a driver build
and load, then validation pods): past it the node fails with the state's own reason."""
DRAIN_POLL = timedelta(seconds=5)
"""How soon to try a drain again while pods are leaving or a PodDisruptionBudget says no."""
READY_POLL = timedelta(seconds=10)
"""How soon to look again while a NotReady node holds the rollout back (skipped, or using
up the unavailable budget): a node's readiness wakes no pass (``NodeView.relevant``)."""
GOING_BACK = frozenset({records.ROLLING_BACK, records.ROLLED_BACK})
FAILING = frozenset({records.FAILED, *GOING_BACK})
"""Phases that count toward ``maxFailedNodes`` (on the current revision)."""
_COMPLETE = progress.Phase.COMPLETE


def _no_restore() -> Mapping[desired.ObjectRef, desired.DesiredObject]:
    return MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class Upgrade:
    """This pass's part of the rollout; ``status`` is ``status.upgrade`` (None: none);
    ``restore``: DaemonSets to apply with a kept template instead of the rendered one
    (a rollback, ``upgrade_rollback``)."""

    node_changes: tuple[node_patches.NodeChange, ...] = ()
    delete: tuple[lifecycle.Deletion, ...] = ()
    drains: tuple[records.DrainRequest, ...] = ()
    job_checks: tuple[upgrade_jobs.JobCheck, ...] = ()
    status: UpgradeStatus | None = None
    halted: str = ""  # why the rollout halted (UpgradeFailed), "" while it may go on
    wake_in: timedelta | None = None
    restore: Mapping[desired.ObjectRef, desired.DesiredObject] = field(default_factory=_no_restore)


def plan(
    wanted: desired.DesiredState,
    seen: observed_.Observed,
    walked: progress.Walk,
    *,
    now: datetime,
) -> Upgrade:
    """This pass's part of the rollout; see the module docstring."""
    sr, policy = wanted.sr_name, seen.upgrade_policy
    key = records.label(sr)
    old = records.outdated(seen)
    target = records.revision(wanted)
    p = upgrade_pass.Pass(sr, target=target, now=now)
    # Each node's phase and record as of sro's own last move of it (``Observed.own_view``).
    nodes = {
        name: seen.own_view(seen.nodes.get(name) or views.NodeView(name=name), sr_name=sr)
        for name in wanted.nodes
    }
    # The records of the nodes an upgrade concerns: those it labelled, and those running an
    # outdated pod. Any other node has nothing to do, nor a record to read (every pass of a
    # fleet with no rollout: most of them).
    recs: dict[str, records.Record] = {}
    phases: dict[str, str] = {}
    skipped: list[str] = []
    for name, node in nodes.items():
        phase = node.labels.get(key, "")
        if not phase and name not in old:
            phases[name] = phase
            continue
        rec = recs[name] = records.record(node, sr)
        if phase in records.IN_PROGRESS:
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
        elif phase in FAILING and rec.revision == target:
            pass  # counts toward the halt; a rollback moves it below
        elif phase in FAILING and name not in old:  # a later revision left nothing to do here
            phase = p.move(node, rec, records.DONE, unschedulable=False if rec.cordoned else None).phase
        elif name in old:
            if (node.unschedulable and not rec.cordoned) or not node.ready:
                skipped.append(name)
                phase = upgrade_status.SKIPPED
                if not node.ready:
                    p.wake.append(READY_POLL)  # its turn comes when it reports Ready again
            else:
                phase = records.PENDING
        phases[name] = phase
    failing = sorted(
        (name, p.records.get(name, recs[name]).reason) for name, ph in phases.items() if ph in FAILING
    )
    halted = bool(failing) and len(failing) >= policy.max_failed_nodes
    back = _Back()
    if halted:
        back = _roll_back(p, wanted, seen, walked, nodes=nodes, recs=recs, phases=phases, old=old)
        failing = sorted(
            (name, p.records.get(name, recs[name]).reason) for name, ph in phases.items() if ph in FAILING
        )
    elif pending := sorted(n for n, ph in phases.items() if ph == records.PENDING):
        in_progress = sum(1 for ph in phases.values() if ph in records.IN_PROGRESS)
        unavailable = sum(1 for n in nodes.values() if n.unschedulable or not n.ready)
        budget = min(
            policy.max_parallel - in_progress,
            policy.unavailable_budget(len(nodes)) - unavailable,
        )
        if len(pending) > budget and any(not n.ready for n in nodes.values()):
            p.wake.append(READY_POLL)  # the budget grows as NotReady nodes come back
        for name in pending[: max(budget, 0)]:
            node = nodes[name]  # unschedulable here only if sro cordoned it for an earlier revision
            p.move(
                node,
                recs[name],
                records.CORDONED,
                unschedulable=None if node.unschedulable else True,
                previous=upgrade_pass.running(old.get(name, ())),
            )
            phases[name] = records.CORDONED
    rolled = [n for n, ph in phases.items() if ph == records.ROLLED_BACK]
    settled = (
        bool(rolled)
        and not back.waiting
        and not any(ph in (records.ROLLING_BACK, *records.IN_PROGRESS) for ph in phases.values())
    )
    message = (
        upgrade_status.halted_message(target, failing, rolled=rolled, unkept=back.unkept) if halted else ""
    )
    return Upgrade(
        node_changes=tuple(p.changes),
        delete=tuple(p.delete),
        drains=tuple(p.drains),
        job_checks=tuple(p.checks),
        status=upgrade_status.status(
            phases, target=target, skipped=skipped, failing=failing, halted=halted, rolled_back=settled
        ),
        halted=message,
        wake_in=min(p.wake, default=None),
        restore=back.restore,
    )


@dataclass(frozen=True, kw_only=True)
class _Back:
    """What the rollback of a halted rollout came to this pass: the DaemonSets to apply
    with a kept template, the drivers whose kept template is gone, and whether a failed
    node is still to go back (waiting for a node still walking, or for the next pass)."""

    restore: Mapping[desired.ObjectRef, desired.DesiredObject] = field(default_factory=_no_restore)
    unkept: frozenset[str] = frozenset()
    waiting: bool = False


def _roll_back(
    p: upgrade_pass.Pass,
    wanted: desired.DesiredState,
    seen: observed_.Observed,
    walked: progress.Walk,
    *,
    nodes: Mapping[str, views.NodeView],
    recs: Mapping[str, records.Record],
    phases: dict[str, str],
    old: Mapping[str, tuple[views.PodView, ...]],
) -> _Back:
    """A halted rollout's rollback (``upgrade_rollback``); updates ``phases`` with the
    nodes it moves."""
    walking = any(ph in records.IN_PROGRESS for ph in phases.values())
    going = [
        n
        for n, ph in phases.items()
        if ph in GOING_BACK or (ph == records.FAILED and recs[n].rollback_failed)
    ]
    eligible = [
        n
        for n, ph in phases.items()
        if ph == records.FAILED
        and seen.upgrade_policy.auto_rollback
        and recs[n].previous
        and not recs[n].rollback_failed
        and not rollback.runs_previous(n, recs[n], wanted, seen)
    ]
    back = rollback.restore(wanted, seen, [recs[n].previous for n in (*going, *eligible)])
    eligible = [n for n in eligible if all(ds in back.hashes for ds in recs[n].previous)]
    for name in eligible:
        if not walking and name not in p.records:  # one that failed in this pass goes in the next
            p.move(nodes[name], recs[name], records.ROLLING_BACK, reason=recs[name].reason)
            phases[name] = records.ROLLING_BACK
    for name in [n for n, ph in phases.items() if ph == records.ROLLING_BACK and n not in p.records]:
        rec = recs[name]
        states = walked.nodes.get(name, {})
        complete = bool(states) and all(st.phase is _COMPLETE for st in states.values())
        why_not = next((f"{s}: {st.reason}" for s, st in states.items() if st.phase is not _COMPLETE), "")
        elapsed = upgrade_pass.elapsed(rec, p.now)
        done = rollback.step(
            name,
            elapsed=elapsed,
            wanted=wanted,
            seen=seen,
            complete=complete,
            why_not=why_not,
            back=back,
            old=old.get(name, ()),
        )
        for pod in done.delete:
            p.pod_deletion(pod, f"rolling {name} back to its previous driver")
        if done.phase == records.ROLLED_BACK:
            uncordon = False if rec.cordoned else None
            p.move(nodes[name], rec, records.ROLLED_BACK, reason=rec.reason, unschedulable=uncordon)
        elif done.phase == records.FAILED:
            why = done.reason[: crd_limits.FAILING_REASON_MAX]
            p.move(nodes[name], rec, records.FAILED, reason=why, rollback_failed=True)
        else:
            p.wake.append(rollback.ROLLBACK_TIMEOUT - elapsed)
        phases[name] = done.phase or records.ROLLING_BACK
    keep = any(
        ph in GOING_BACK or (ph == records.FAILED and p.records.get(n, recs[n]).rollback_failed)
        for n, ph in phases.items()
    )
    return _Back(
        restore=back.objects if keep else _no_restore(),
        unkept=back.missing,
        waiting=any(phases[n] == records.FAILED for n in eligible),
    )


def _advance(
    p: upgrade_pass.Pass,
    node: views.NodeView,
    rec: records.Record,
    phase: str,
    *,
    seen: observed_.Observed,
    walked: progress.Walk,
    old: Sequence[views.PodView],
    policy: upgrade_policy.UpgradePolicy,
    drained: tuple[str, ...] | None,
) -> str:
    """One step of a node in progress; returns its phase after this pass."""
    elapsed = upgrade_pass.elapsed(rec, p.now)
    emptied = records.DRAINING if policy.drain.enable else records.REPLACING
    if phase in (records.CORDONED, records.WAITING, records.DRAINING) and not old:
        return p.move(node, rec, records.VALIDATING).phase  # the template went back to what it runs: no drain
    if phase == records.CORDONED and (question := upgrade_jobs.check(node.name, policy)) is not None:
        p.checks.append(question)  # asked now: the next pass has the answer
        return p.move(node, rec, records.WAITING).phase
    if phase == records.CORDONED:
        return p.move(node, rec, emptied).phase
    if phase == records.WAITING:
        jobs = upgrade_jobs.step(node.name, policy=policy, running=seen.jobs.get(node.name), elapsed=elapsed)
        if jobs.check is None:
            return p.move(node, rec, emptied, reason=jobs.reason).phase
        p.checks.append(jobs.check)
        p.wake.append(jobs.wake_in)
        return phase
    if phase == records.DRAINING:
        timeout = timedelta(seconds=policy.drain.timeout_seconds)
        if drained is not None and not drained:
            return p.move(node, rec, records.REPLACING).phase
        if elapsed >= timeout and not policy.drain.force:
            left = ", ".join(drained[:5]) if drained else "unknown"
            why = f"drain did not finish within {policy.drain.timeout_seconds}s; left: {left}"
            return p.move(node, rec, records.FAILED, reason=why[: crd_limits.FAILING_REASON_MAX]).phase
        d = policy.drain
        p.drains.append(
            records.DrainRequest(
                node=node.name,
                pod_selector=d.pod_selector,
                delete_empty_dir_data=d.delete_empty_dir_data,
                force=d.force and elapsed >= timeout,
            )
        )
        p.wake.append(DRAIN_POLL)
        return phase
    if phase == records.REPLACING:
        if not old:
            return p.move(node, rec, records.VALIDATING).phase
        if elapsed >= REPLACE_TIMEOUT:
            why = f"the outdated pod {old[0].name} did not go"
            return p.move(node, rec, records.FAILED, reason=why).phase
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
        return p.move(node, rec, records.DONE, unschedulable=False if rec.cordoned else None).phase
    bad = next(((n, s) for n, s in states.items() if s.phase is progress.Phase.FAILED or s.stuck), None)
    if bad is not None or elapsed >= VALIDATE_TIMEOUT:
        why = f"{bad[0]} failed: {bad[1].reason}" if bad else f"not valid after {VALIDATE_TIMEOUT}"
        return p.move(node, rec, records.FAILED, reason=why[: crd_limits.FAILING_REASON_MAX]).phase
    p.wake.append(VALIDATE_TIMEOUT - elapsed)
    return phase
