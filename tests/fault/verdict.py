"""The audit of a fault test: what the API server's log and the test's own watch prove.

Faults must lose nothing (every round ends converged and, after deletion, clean; the
lifecycle checks those live) and act once. Acting once is judged here, after the fact,
from two independent records: kube-apiserver's audit log of writes
(``simcluster.audit``), which names each ``sro run`` process by its own client
certificate, and the test's watch of pods and of the Lease (``recorder``):

* no write by one process after another process's Lease ``acquireTime`` (each write must
  come from the holder of the most recent acquisition before it);
* every driver pod replaced at most once per intended change (per node: one pod, plus
  one per kernel move), counted by UID in the watch and as DaemonSet pod creations in the
  audit;
* no Event posted twice for one transition (per phase, per reason and note).
"""

from __future__ import annotations

import dataclasses
import datetime
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import lifecycle
import processes
import recorder as recorder_mod
from simcluster import audit
from support import cluster as cluster_mod

DS_CONTROLLER = "system:serviceaccount:kube-system:daemon-set-controller"


def utc(t: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(t, datetime.UTC)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Totals:
    """What the audit counted, for the report."""

    sro_writes: int
    by_verb: dict[str, int]
    failed: int
    lease_writes: int
    acquisitions: int
    driver_pods_created: int
    events_posted: int
    most_applies: int  # the most applies one object got (a cache lagging behind must not multiply them)

    def line(self) -> str:
        verbs = ", ".join(f"{k} {v}" for k, v in sorted(self.by_verb.items()))
        return (
            f"audit: {self.sro_writes} sro writes ({verbs}; {self.failed} refused or failed), "
            f"{self.lease_writes} Lease writes, {self.acquisitions} acquisitions, "
            f"{self.driver_pods_created} driver pods created, {self.events_posted} Events posted, "
            f"at most {self.most_applies} applies of one object"
        )


def sro_writes(writes: Iterable[audit.Write], *, fleet: processes.Fleet) -> list[audit.Write]:
    users = set(fleet.by_user())
    return [w for w in writes if w.user in users]


def _is_lease(w: audit.Write) -> bool:
    return w.resource == "leases" and w.namespace == processes.OPERATOR_NAMESPACE


def acquisitions(
    writes: Sequence[audit.Write], *, fleet: processes.Fleet, rec: recorder_mod.Recorder
) -> list[tuple[str, datetime.datetime]]:
    """(user, time) of every Lease acquisition: the Lease's own ``acquireTime`` as watched,
    and, for any the watch missed, the first successful Lease write of a new holder."""
    found: list[tuple[str, datetime.datetime]] = []
    for holder, at in rec.acquisitions():
        owner = next((p.user for p in fleet.all if p.holds(holder)), f"unknown:{holder}")
        found.append((owner, at))
    previous = ""
    for w in writes:
        if _is_lease(w) and w.succeeded and w.user != previous:
            if not any(u == w.user for u, _ in found):
                found.append((w.user, w.time))
            previous = w.user
    return sorted(found, key=lambda x: x[1])


def writes_after_takeover(
    writes: Sequence[audit.Write], *, taken: Sequence[tuple[str, datetime.datetime]]
) -> list[str]:
    """Non-Lease writes whose process did not hold the most recent acquisition before them."""
    bad = []
    for w in writes:
        if _is_lease(w):
            continue
        before = [u for u, at in taken if at <= w.time]
        holder = before[-1] if before else ""
        if holder != w.user:
            bad.append(
                f"{w.time.isoformat()} {w.user} {w.verb} {w.resource}/{w.subresource} "
                f"{w.namespace}/{w.name} ({w.code}) while {holder or 'nobody'} held the Lease"
            )
    return bad


MOST_APPLIES = 5
"""Applies of one object sro may send in a test: a create, one change (a kernel move
recreates a validation pod of the same name), and a request retried after its answer was
lost, with room to spare; a pass repeating an apply its cache has not shown yet makes
tens."""


def applies_per_object(writes: Sequence[audit.Write]) -> Counter[tuple[str, str, str]]:
    """sro's applies (patches of the object itself) per object; Nodes and SpecialResources,
    which get a patch per label change and per finalizer, are not counted, nor dry runs
    (a state's first objects are checked so before any is written: nothing is stored)."""
    return Counter(
        (w.resource, w.namespace, w.name)
        for w in writes
        if w.verb == "patch"
        and not w.subresource
        and not w.dry_run
        and w.resource not in ("nodes", "specialresources")
    )


def _timeline(writes: Sequence[audit.Write], key: tuple[str, str, str]) -> str:
    """Every write of one object, in order: when, by which process, which verb, what answer
    (a failure names the object's own history, to tell retries from repeats)."""
    return "; ".join(
        f"{w.time:%H:%M:%S.%f} {w.user.rsplit(':', 1)[-1]} {w.verb}{' dry-run' * w.dry_run} {w.code}"
        for w in sorted(writes, key=lambda w: w.time)
        if (w.resource, w.namespace, w.name) == key and not w.subresource
    )


def driver_replacements(
    rec: recorder_mod.Recorder, *, round_: lifecycle.Round, writes: Sequence[audit.Write] = ()
) -> list[str]:
    """Nodes whose driver pod was replaced more often than the round's kernel moves asked,
    each with what tells the cause (``churn``)."""
    moved = Counter(node for r in round_.records for node in r.moved)
    bad = []
    pods = rec.driver_pods(round_.name)
    for node in round_.nodes:
        seen = pods.get(node, [])
        allowed = 1 + moved[node]
        if not 1 <= len(seen) <= allowed:
            bad.append(f"{node}: {len(seen)} driver pods (allowed {allowed}): {churn(seen, writes)}")
    return bad


def churn(seen: Sequence[recorder_mod.Seen], writes: Sequence[audit.Write]) -> str:
    """Of pods replaced too often: their DaemonSets, how long they lived, their last phase,
    who deleted them (the audit log, by pod name) and the first few UIDs."""
    names = {(s.body.get("metadata") or {}).get("name", "") for s in seen}
    owners = Counter(
        o.get("name", "?")
        for s in seen
        for o in (s.body.get("metadata") or {}).get("ownerReferences") or ()
        if o.get("kind") == "DaemonSet"
    )
    lives = sorted(s.gone_at - s.first_seen for s in seen if s.gone_at is not None)
    phases = Counter((s.body.get("status") or {}).get("phase", "?") for s in seen)
    deleters = Counter(
        f"{w.user} ({w.code})"
        for w in writes
        if w.resource == "pods" and w.verb == "delete" and w.name in names
    )
    life = f"lived p50 {lives[len(lives) // 2]:.1f} s" if lives else "none gone"
    return (
        f"DaemonSets {dict(owners)}, {life}, last phases {dict(phases)}, deleted by {dict(deleters)}, "
        f"first {[s.uid for s in seen[:3]]}"
    )


def ds_pod_creations(writes: Sequence[audit.Write], *, round_: lifecycle.Round) -> int:
    return len(
        [
            w
            for w in writes
            if w.user == DS_CONTROLLER and w.verb == "create" and w.resource == "pods"
            and w.namespace == round_.name and w.succeeded
        ]
    )  # fmt: skip


def repeated_events(events: Sequence[dict[str, Any]], *, round_: lifecycle.Round) -> list[str]:
    """Events with the same reason and note posted twice within one phase."""
    bad = []
    records = list(round_.records)
    for i, record in enumerate(records):
        # A phase owns the Events from its action until the next phase's action (its last
        # transition's Event may come just after the test saw the phase done).
        start = utc(record.started)
        end = utc(records[i + 1].started) if i + 1 < len(records) else utc(record.ended + 5)
        in_phase: dict[tuple[str, str], list[str]] = {}
        for e in events:
            if start <= recorder_mod._aware(e.get("eventTime") or e["metadata"]["creationTimestamp"]) < end:
                copy = f"{e['metadata'].get('name')} at {e.get('eventTime')} by {e.get('reportingInstance')}"
                in_phase.setdefault((e.get("reason", ""), e.get("note", "")), []).append(copy)
        bad += [
            f"{record.phase}: {reason} {note!r} x{len(copies)}: {copies}"
            for (reason, note), copies in in_phase.items()
            if len(copies) > 1
        ]
    return bad


def judge(
    *,
    cluster: cluster_mod.Cluster,
    fleet: processes.Fleet,
    rec: recorder_mod.Recorder,
    rounds: Sequence[lifecycle.Round],
    events: dict[str, list[dict[str, Any]]],
    since: float,
) -> Totals:
    """Fails the test with every violation found; returns the totals for the report."""
    everything = [w for w in audit.read(cluster.audit_log) if w.time >= utc(since)]
    mine = sro_writes(everything, fleet=fleet)
    taken = [(u, at) for u, at in acquisitions(mine, fleet=fleet, rec=rec) if at >= utc(since)]
    problems: list[str] = []
    problems += [f"write after takeover: {p}" for p in writes_after_takeover(mine, taken=taken)]
    unknown = [u for u, _ in taken if u.startswith("unknown:")]
    problems += [f"Lease held by no process of this test: {u}" for u in unknown]
    created = 0
    for round_ in rounds:
        replaced = driver_replacements(rec, round_=round_, writes=everything)
        problems += [f"round {round_.number}: {p}" for p in replaced]
        n = ds_pod_creations(everything, round_=round_)
        created += n
        allowed = len(round_.nodes) + sum(len(r.moved) for r in round_.records)
        if n > allowed:
            problems.append(f"round {round_.number}: {n} driver pods created, {allowed} intended")
        problems += [
            f"round {round_.number}: Event twice: {p}"
            for p in repeated_events(events[round_.name], round_=round_)
        ]
    problems += [
        f"sro exited unasked: {dataclasses.replace(e, stalled='(below)') if e.stalled else e}"
        + (f"; its shutdown hung, the exit watch ended it:\n{e.stalled}" if e.stalled else "")
        for e in fleet.unexpected_exits()
    ]
    applies = applies_per_object(mine)
    problems += [
        f"{n} applies of {'/'.join(key)}: {_timeline(mine, key)}"
        for key, n in applies.items()
        if n > MOST_APPLIES
    ]
    totals = Totals(
        sro_writes=len(mine),
        by_verb=dict(Counter(w.verb for w in mine if not _is_lease(w))),
        failed=sum(1 for w in mine if not w.succeeded),
        lease_writes=sum(1 for w in mine if _is_lease(w)),
        acquisitions=len(taken),
        driver_pods_created=created,
        events_posted=sum(1 for w in mine if w.resource == "events" and w.verb == "create" and w.succeeded),
        most_applies=max(applies.values(), default=0),
    )
    assert not problems, "\n".join([totals.line(), *problems])
    return totals
