"""Automatic rollback of a halted driver upgrade: failed nodes back on the last revision
that validated on them.

When ``maxFailedNodes`` nodes failed on a revision, the rollout halts
(``sro.plan.upgrade``); with ``autoRollback`` the failed nodes then go back. How:

* *what to go back to*: when a node's walk begins, its record keeps the
  ``controller-revision-hash`` of each driver pod it ran (``Record.previous``); the
  DaemonSet controller keeps the templates a DaemonSet had as ControllerRevisions (owned
  by the DaemonSet, labelled like its pods; kept while a pod of one runs, and the last
  ten besides), so that template is still in the cluster, whatever happened to sro
  meanwhile; a node whose template is gone stays failed, and the message says so;
* *how*: sro puts that template back on the DaemonSet itself (the render is left as it
  is; the planner applies the kept template in its place). The DaemonSet stays the one
  object sro writes and the DaemonSet controller makes pods for, and since it is
  ``OnDelete`` no pod changes by itself: nodes that never started keep their pods (which
  already run that template), nodes that finished keep theirs. Only the failed nodes'
  driver pods are deleted (those nodes are cordoned and drained already, and there are
  at most ``maxFailedNodes`` of them), once the DaemonSet carries the kept template, and
  come back on it; their later states run again and, once all complete, the node is
  uncordoned (if sro cordoned it) and *rolled-back*;
* *when*: only once no node is still walking to the failed revision (those finish first,
  done or failed), and only for nodes whose driver was replaced: a node that failed
  before (a drain past its timeout) still runs its previous driver and stays cordoned
  with its reason;
* *how long*: the kept template stays on the DaemonSet while the rollout is halted and
  a node of this revision is rolling back or rolled back (or failed its rollback).
  Rolled-back nodes count toward ``maxFailedNodes``, so the halt holds until the spec or
  the recipe changes the render again (a new revision), which walks every node again,
  rolled-back ones too; raising ``maxFailedNodes`` instead lifts the halt, the rendered
  template goes back on the DaemonSet and the rollout goes on, the rolled-back nodes
  keeping their pods. A node whose rollback does not complete within
  ``ROLLBACK_TIMEOUT`` fails for good (``rollback_failed``) and is never rolled back
  again for this revision.

Everything is recomputed from the node records, the ControllerRevisions and the render
on each pass, so an operator restart in the middle of a rollback carries on with it.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta

from sro.model import desired, views
from sro.plan import live_records
from sro.plan import observed as observed_
from sro.plan import upgrade_records as records

ROLLBACK_TIMEOUT = timedelta(minutes=20)
"""How long a node may take to be back on its previous driver and valid again (the old
pod deleted, the kept template's pod made and ready, every later state complete)."""


def _ds_ref(wanted: desired.DesiredState, name: str) -> desired.ObjectRef:
    return desired.ObjectRef(api_version="apps/v1", kind="DaemonSet", namespace=wanted.namespace, name=name)


def runs_previous(
    node: str, rec: records.Record, wanted: desired.DesiredState, seen: observed_.Observed
) -> bool:
    """Whether ``node`` still runs, for every driver its walk began with, a pod of that
    revision (its driver was never replaced: nothing to roll back)."""
    for name, hash_ in rec.previous.items():
        pods = seen.daemonset_pods(_ds_ref(wanted, name), node)
        if not any(not p.deleting and p.labels.get(live_records.REVISION_HASH) == hash_ for p in pods):
            return False
    return True


@dataclass(frozen=True, kw_only=True)
class Restore:
    """The templates put back: DaemonSet ref -> the desired object with its kept template,
    and DaemonSet name -> the hash its pods carry (``missing``: named drivers whose kept
    template the cluster no longer has)."""

    objects: Mapping[desired.ObjectRef, desired.DesiredObject]
    hashes: Mapping[str, str]
    missing: frozenset[str] = frozenset()


def restore(
    wanted: desired.DesiredState, seen: observed_.Observed, previous: Iterable[Mapping[str, str]]
) -> Restore:
    """For each upgraded DaemonSet, the template the nodes going back ran before (the most
    common among them; by hash when they differ), from its ControllerRevision."""
    wanted_hashes: dict[str, Counter[str]] = {}
    for mapping in previous:
        for name, hash_ in mapping.items():
            wanted_hashes.setdefault(name, Counter())[hash_] += 1
    objects: dict[desired.ObjectRef, desired.DesiredObject] = {}
    hashes: dict[str, str] = {}
    missing: set[str] = set()
    for obj in wanted.objects:
        counts = wanted_hashes.get(obj.ref.name)
        if not records.on_delete(obj) or not counts:
            continue
        hash_ = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        live = seen.objects.get(obj.ref)
        kept = seen.revision_of(live.uid, hash_) if live is not None else None
        if kept is None:
            missing.add(obj.ref.name)
            continue
        spec = dict(obj.body.get("spec") or {})
        spec["template"] = copy.deepcopy(dict(kept.template))
        objects[obj.ref] = replace(obj, body={**obj.body, "spec": spec})
        hashes[obj.ref.name] = hash_
    return Restore(objects=objects, hashes=hashes, missing=frozenset(missing))


@dataclass(frozen=True, kw_only=True)
class Step:
    """What one pass does for a node rolling back: its next phase (``""``: stays), the
    pods to delete, and the reason if it failed."""

    phase: str = ""
    delete: tuple[views.PodView, ...] = ()
    reason: str = ""


def step(
    node: str,
    *,
    elapsed: timedelta,
    wanted: desired.DesiredState,
    seen: observed_.Observed,
    complete: bool,
    why_not: str,
    back: Restore,
    old: Iterable[views.PodView],
) -> Step:
    """One pass of a node in ``rolling-back``.

    The failed revision's pods go once the DaemonSet carries the kept template again
    (they are *outdated* then); the node is rolled back when each driver runs a pod of
    the kept hash and every state is complete. Failed states are not final here: a
    validation pod that failed on the bad driver is retried by the walk and passes on the
    good one; only the time bound fails a rollback."""
    wrong: list[views.PodView] = []
    for name, hash_ in back.hashes.items():
        pods = seen.daemonset_pods(_ds_ref(wanted, name), node)
        wrong.extend(p for p in pods if not p.deleting and p.labels.get(live_records.REVISION_HASH) != hash_)
    if not wrong and complete:
        return Step(phase=records.ROLLED_BACK)
    if elapsed >= ROLLBACK_TIMEOUT:
        return Step(phase=records.FAILED, reason=f"rollback not complete after {ROLLBACK_TIMEOUT}: {why_not}")
    outdated = {p.uid for p in old}
    return Step(delete=tuple(p for p in wrong if p.uid in outdated))  # the rest once the template is back
