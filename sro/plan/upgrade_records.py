"""What a driver upgrade records on each node, and what it reads from the cluster to decide.

The walk (``sro.plan.upgrade``) is recomputed from the cluster on every pass, so all it
knows of a node's progress must be on the node itself: its phase in the label
``<sr>.sro.dev/upgrade`` (for people and ``sro status``) and the rest in the annotation
``sro.dev/upgrade.<sr>`` (JSON ``Record``). Both are written in the patch that moves the
node, so an operator killed between two passes finds every node where it left it.

The other inputs are the cluster's. A rollout's *revision* is computed from the render (a
hash of each ``OnDelete`` DaemonSet's pod template), not from the live DaemonSets: a
rollback puts an older template back on the live object, and the rollout it undid must
still be recognised as the one that failed until the spec changes. A pod is *outdated*
when its DaemonSet has moved to a later template generation and (where the DaemonSet
controller's ControllerRevisions are known) its ``controller-revision-hash`` is not the
current one: a template set back to what a pod already runs replaces nothing.

Kept apart from the walk so the rollback (``upgrade_rollback``) and the status
(``upgrade_status``) read the same records without importing the walk.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sro.model import crd_limits, desired, records, views
from sro.plan import lifecycle, live_records
from sro.plan import observed as observed_

LABEL = lifecycle.UPGRADE
PENDING, CORDONED, WAITING, DRAINING, REPLACING, VALIDATING = (
    "pending",
    "cordoned",
    "waiting-for-jobs",
    "draining",
    "replacing",
    "validating",
)
DONE, FAILED = "done", "failed"
ROLLING_BACK, ROLLED_BACK = "rolling-back", "rolled-back"
PHASES = (
    PENDING,
    CORDONED,
    WAITING,
    DRAINING,
    REPLACING,
    VALIDATING,
    DONE,
    FAILED,
    ROLLING_BACK,
    ROLLED_BACK,
)
IN_PROGRESS = frozenset({CORDONED, WAITING, DRAINING, REPLACING, VALIDATING})
"""Phases of a node on its way to the revision being rolled out."""
NEW_POD = frozenset({REPLACING, VALIDATING, ROLLING_BACK})
"""Phases in which only a pod of the current template counts for the node's states."""


def label(sr_name: str) -> str:
    return lifecycle.label_prefix(sr_name) + LABEL


def annotation(sr_name: str) -> str:
    return lifecycle.upgrade_annotation(sr_name)


def _no_previous() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class Record:
    """What the node annotation keeps of a node's walk.

    ``previous``: for each upgraded DaemonSet (by name), the ``controller-revision-hash``
    of the pod the node ran when its walk began: the last revision that validated there,
    to which a failed node is rolled back. ``rollback_failed``: the rollback itself failed
    (the node is never rolled back again for this revision)."""

    phase: str = ""
    since: str = ""
    cordoned: bool = False  # sro made the node unschedulable (and so may undo it)
    revision: str = ""
    reason: str = ""
    previous: Mapping[str, str] = field(default_factory=_no_previous)
    rollback_failed: bool = False

    def to_json(self) -> str:
        body: dict[str, Any] = {
            "phase": self.phase,
            "since": self.since,
            "cordoned": self.cordoned,
            "revision": self.revision,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.previous:
            body["previous"] = dict(self.previous)
        if self.rollback_failed:
            body["rollbackFailed"] = True
        return json.dumps(body, sort_keys=True)


def record(node: views.NodeView, sr_name: str) -> Record:
    """The node's record (an unreadable one reads as none)."""
    return _parsed(node.annotations.get(annotation(sr_name), ""))


_NONE = Record()


def _read(text: str) -> Record:
    """A record's annotation read."""
    if not text:
        return _NONE
    raw = records.loads(text)
    if not isinstance(raw, dict):
        raw = {}
    previous = raw.get("previous")
    return Record(
        phase=str(raw.get("phase", "")),
        since=str(raw.get("since", "")),
        cordoned=raw.get("cordoned") is True,
        revision=str(raw.get("revision", "")),
        reason=str(raw.get("reason", "")),
        previous=MappingProxyType(
            {str(k): str(v) for k, v in previous.items()} if isinstance(previous, dict) else {}
        ),
        rollback_failed=raw.get("rollbackFailed") is True,
    )


# Every node of a pass asks, and most carry none or the same few (sro's own records are
# a few hundred characters).
_parsed = records.short_cached(_read, longest=2048, size=4096)


@dataclass(frozen=True, kw_only=True)
class DrainRequest:
    """Evict every pod on ``node`` but DaemonSet, mirror and sro's own pods (those
    carrying all of ``pod_selector``, when given); with ``force``, delete what eviction
    could not move."""

    node: str
    pod_selector: Mapping[str, str]
    delete_empty_dir_data: bool
    force: bool = False


def replacing(sr_name: str, seen: observed_.Observed) -> frozenset[str]:
    """Nodes whose previous driver pod no longer counts (see ``NEW_POD``), as of sro's
    own last move of each."""
    key = label(sr_name)
    return frozenset(name for name, node in seen.nodes.items() if seen.own_labels(node).get(key) in NEW_POD)


def upgraded(seen: observed_.Observed) -> Mapping[str, live_records.LiveObject]:
    """The live ``OnDelete`` DaemonSets sro upgrades, by uid."""
    return {
        live.uid: live
        for _, live in seen.of_kind("DaemonSet")
        if live.uid and live.update_strategy == lifecycle.ON_DELETE
    }


def outdated(seen: observed_.Observed) -> Mapping[str, tuple[views.PodView, ...]]:
    """Node -> pods of owned ``OnDelete`` DaemonSets made from an older pod template."""
    by_uid = upgraded(seen)
    current = {uid: seen.current_revision(uid) for uid in by_uid}
    found: dict[str, list[views.PodView]] = {}
    if not by_uid:
        return {}
    for pod in [p for p in seen.pods if p.owner_uid in by_uid]:  # those DaemonSets' pods, in one sweep
        live = by_uid.get(pod.owner_uid) if pod.owner_kind == "DaemonSet" else None
        if live is None or pod.deleting or live.deleting or not pod.template_generation.isdigit():
            continue
        if int(pod.template_generation) >= live.template_generation:
            continue
        now = current.get(live.uid)
        if now is not None and pod.labels.get(live_records.REVISION_HASH) == now.hash:
            continue  # the template went back to the one this pod runs
        found.setdefault(pod.node, []).append(pod)
    return {node: tuple(pods) for node, pods in found.items()}


def template_hash(obj: desired.DesiredObject) -> str:
    """A short, stable digest of a desired DaemonSet's pod template."""
    template = (obj.body.get("spec") or {}).get("template") or {}
    canonical = json.dumps(template, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]


def on_delete(obj: desired.DesiredObject) -> bool:
    """Whether a desired object is a DaemonSet sro upgrades (``sro.hooks.upgrade``)."""
    if obj.kind != "DaemonSet":
        return False
    strategy = (obj.body.get("spec") or {}).get("updateStrategy")
    return isinstance(strategy, Mapping) and strategy.get("type") == lifecycle.ON_DELETE


def revision(wanted: desired.DesiredState) -> str:
    """The revision being rolled out: each upgraded DaemonSet and a hash of its rendered
    pod template (the same render gives the same revision, whatever the live objects say;
    worked out once per render, as every pass asks)."""
    return wanted.keep("upgrade.revision", _revision)


def _revision(wanted: desired.DesiredState) -> str:
    parts = sorted(f"{o.ref.name}@{template_hash(o)}" for o in wanted.objects if on_delete(o))
    text = ",".join(parts)
    if len(text) <= crd_limits.UPGRADE_REVISION_MAX:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]  # cut, yet still one name per render
    return text[: crd_limits.UPGRADE_REVISION_MAX - len(digest) - 2] + "…@" + digest
