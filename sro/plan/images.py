"""What the planner does about per-kernel images that a registry says are not there.

A kernel-affine recipe names its driver image by kernel. Before a per-kernel DaemonSet
is created or a node moves to a new kernel group, the engine asks the registry about
each operand image of that group (``sro.images``) and hands the answers over as
``Observed.images``: group key -> one ``ImageCheck`` per image. An empty mapping means
nothing was checked (checks off, or no registry listed for them) and changes nothing.

The rules, for a group whose images are not all known to exist (*blocked*):

* its kernel-affine objects are not written: a DaemonSet of a missing image would only
  make pods that sit in ``ImagePullBackOff``, and one that already exists is left as it
  is (it may run a digest checked before; re-applying the unpinned tag would roll it);
* its nodes are not *moved*: the kernel-group annotation keeps the group the node was
  walked with, so no reset deletes what runs there and the move happens once the image
  exists; meanwhile no DaemonSet that is no longer desired is deleted (the old group's
  DaemonSet stays while nodes are recorded on it: last known good);
* a node of a group whose image is *missing* gets the ``NoSchedule`` taint
  ``<sr>.sro.dev/driver-missing`` (workloads needing the driver are not scheduled onto
  a node without one); it is taken off once every state that needed a checked image is
  complete on the node again;
* the status is ``Degraded``: ``ImageMissing`` naming the image, the kernel and the
  nodes, or ``RegistryUnavailable`` (the registry could not be asked, or refused the
  credentials) with the registry's answer. Only a missing image is ``ImageMissing``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sro.model import crd_limits, desired, progress, views
from sro.plan import lifecycle, node_patches
from sro.plan import observed as observed_
from sro.status import summary
from sro.status.body import StatusBody

DRIVER_MISSING = "driver-missing"
IMAGE_MISSING = "ImageMissing"
REGISTRY_UNAVAILABLE = "RegistryUnavailable"
NODES_NAMED = 5
"""Nodes named in a message, the first by name; the rest are counted."""


ImageCheck = observed_.ImageCheck
Checks = Mapping[str, tuple[ImageCheck, ...]]


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """This pass's decisions about images; empty when every checked image exists."""

    missing: frozenset[str] = frozenset()
    """Group keys with an image the registry says does not exist."""
    unavailable: frozenset[str] = frozenset()
    """Group keys with an image whose registry could not say (and none missing)."""
    held: frozenset[str] = frozenset()
    """Selected nodes recorded on another group whose move waits for an image."""

    @property
    def blocked(self) -> frozenset[str]:
        return self.missing | self.unavailable


def driver_missing_taint(sr_name: str) -> views.Taint:
    key = lifecycle.label_prefix(sr_name) + DRIVER_MISSING
    return views.Taint(key=key, value="", effect="NoSchedule")


def decide(wanted: desired.DesiredState, seen: observed_.Observed) -> Verdict:
    """Which groups are blocked, and which nodes wait for them to move."""
    if not seen.images:
        return Verdict()
    missing = frozenset(k for k, checks in seen.images.items() if any(c.missing for c in checks))
    unavailable = frozenset(
        k for k, checks in seen.images.items() if k not in missing and any(not c.exists for c in checks)
    )
    blocked = missing | unavailable
    annotation = lifecycle.kernel_annotation(wanted.sr_name)
    held = set()
    for name in wanted.nodes:
        group, node = wanted.kernel_groups.get(name), seen.nodes.get(name)
        recorded = node.annotations.get(annotation, "") if node is not None else ""
        if group is not None and group.key in blocked and recorded and recorded != group.key:
            held.add(name)
    return Verdict(missing=missing, unavailable=unavailable, held=frozenset(held))


def withhold(objects: Iterable[desired.DesiredObject], verdict: Verdict) -> tuple[desired.DesiredObject, ...]:
    """``objects`` without the kernel-affine copies of blocked groups."""
    blocked = verdict.blocked
    return tuple(o for o in objects if o.kernel_group is None or o.kernel_group.key not in blocked)


def keep_last_good(
    deletions: Iterable[lifecycle.Deletion], verdict: Verdict
) -> tuple[lifecycle.Deletion, ...]:
    """``deletions`` minus DaemonSets while a group is blocked: the DaemonSet a node ran
    on its recorded group stays until that node can move."""
    if not verdict.blocked:
        return tuple(deletions)
    return tuple(d for d in deletions if d.ref.kind != "DaemonSet")


def _needs_taint(
    name: str, node: views.NodeView, *, taint: views.Taint, wanted: desired.DesiredState,
    seen: observed_.Observed, walked: progress.Walk, verdict: Verdict,
) -> bool:  # fmt: skip
    group = wanted.kernel_groups.get(name)
    if group is None:
        return False
    if group.key in verdict.missing:
        return True
    if taint not in node_patches.owned_taints(node, wanted.sr_name):
        return False
    states = {c.state for c in seen.images.get(group.key, ())}
    if group.key in verdict.unavailable:
        return True  # nothing is known yet: the driver is not ready
    return not all(walked.state_of(name, s).phase is progress.Phase.COMPLETE for s in states)


def node_changes(
    changes: Sequence[node_patches.NodeChange],
    wanted: desired.DesiredState,
    seen: observed_.Observed,
    walked: progress.Walk,
    verdict: Verdict,
) -> tuple[node_patches.NodeChange, ...]:
    """``changes`` with the driver-missing taint put on or taken off selected nodes, and
    the kernel-group annotation of held nodes left as recorded."""
    taint = driver_missing_taint(wanted.sr_name)
    annotation = lifecycle.kernel_annotation(wanted.sr_name)
    by_node = {c.node: c for c in changes}
    recorded = node_patches.taints_annotation(wanted.sr_name)
    for name in wanted.nodes:
        node = seen.nodes.get(name)
        if node is None:
            continue
        # A node recording none of sro's taints carries none (most nodes: not parsed).
        carries = bool(node.annotations.get(recorded)) and taint in node_patches.owned_taints(
            node, wanted.sr_name
        )
        if not verdict.blocked and not carries:
            continue
        want = _needs_taint(name, node, taint=taint, wanted=wanted, seen=seen, walked=walked, verdict=verdict)
        taints = (*seen.taints, taint) if want else seen.taints
        needed = node_patches.taints_change(node, sr_name=wanted.sr_name, wanted=taints)
        change = by_node.get(name)
        if change is None and not needed and name not in verdict.held:
            continue
        change = change or node_patches.NodeChange(node=name)
        annotations = dict(change.annotations)
        if name in verdict.held:
            annotations.pop(annotation, None)
        change = dataclasses.replace(change, annotations=annotations, taints=taints if needed else None)
        if change.labels or change.annotations or change.taints is not None:
            by_node[name] = change
        else:
            by_node.pop(name, None)
    return tuple(sorted(by_node.values(), key=lambda c: c.node))


def _nodes(names: Sequence[str]) -> str:
    shown = ", ".join(names[:NODES_NAMED])
    more = len(names) - NODES_NAMED
    return f"{shown} and {more} more" if more > 0 else shown


def problem(
    wanted: desired.DesiredState, seen: observed_.Observed, verdict: Verdict
) -> tuple[str, str] | None:
    """The Degraded reason and message the images give, or None."""
    if not verdict.blocked:
        return None
    members: dict[str, list[str]] = {}
    for name in wanted.nodes:
        group = wanted.kernel_groups.get(name)
        if group is not None:
            members.setdefault(group.key, []).append(name)
    groups = {g.key: g for g in wanted.kernel_groups.values()}
    keys = sorted(verdict.missing) or sorted(verdict.unavailable)
    lines = []
    for key in keys:
        group = groups.get(key)
        kernel = f"kernel {group.kernel} ({group.os.tag})" if group else key
        for check in seen.images.get(key, ()):
            if check.exists or (verdict.missing and not check.missing):
                continue
            said = f": {check.detail}" if check.detail else ""
            if check.outcome == "invalid":  # no push or build can make it exist: the recipe's to fix
                verb = f"is not an image reference{said}"
            elif check.missing:
                verb = "does not exist"
            else:
                verb = f"could not be checked ({check.outcome}{said})"
            lines.append(f"image {check.image} {verb} for {kernel} on nodes {_nodes(members.get(key, []))}")
    reason = IMAGE_MISSING if verdict.missing else REGISTRY_UNAVAILABLE
    return reason, "; ".join(dict.fromkeys(lines)) + "; nothing is torn down meanwhile"


def status(
    status_: StatusBody,
    wanted: desired.DesiredState,
    seen: observed_.Observed,
    verdict: Verdict,
    *,
    now: datetime,
) -> StatusBody:
    """``status_`` with the images' Degraded reason when they give one (a failed state
    outranks it: its nodes need a look first), and each kernel row's image and digest."""
    rows = kernel_images(wanted, seen)
    if rows:
        kernels: list[Any] = []
        for row in status_.get("kernels") or ():
            extra = rows.get((row["kernel"], row["os"]))
            kernels.append({**row, **extra} if extra else row)
        status_ = {**status_, "kernels": kernels}
    found = problem(wanted, seen, verdict)
    failing = any(c.get("reason") == "StateFailed" for c in status_.get("conditions") or ())
    if found is None or failing:
        return status_
    reason, message = found
    return summary.status_for_error(
        seen.previous_status, reason=reason, message=message, generation=seen.generation, now=now,
        current=status_,
    )  # fmt: skip


def kernel_images(
    wanted: desired.DesiredState, seen: observed_.Observed
) -> dict[tuple[str, str], dict[str, str]]:
    """(kernel, OS tag) -> ``{"image", "digest"}`` of the group's first checked image that
    exists (the driver's, in recipe order); the image alone when none does yet."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for group in set(wanted.kernel_groups.values()):
        checks = seen.images.get(group.key, ())
        if not checks:
            continue
        best = next((c for c in checks if c.exists), checks[0])
        row = {"image": best.image[: crd_limits.KERNEL_IMAGE_MAX]}
        if best.digest:
            row["digest"] = best.digest[: crd_limits.KERNEL_DIGEST_MAX]
        out[(group.kernel, group.os.tag)] = row
    return out
