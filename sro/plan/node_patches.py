"""Pure builders of node label and taint patches: only ever what sro put there.

Nodes belong to their kubelet, to NFD and to administrators; sro adds a few labels
(``<sr>.sro.dev/<state>``, ``<sr>.sro.dev/complete``) and, for hard partitioning, the
SpecialResource's taints. Both kinds of write are built so they cannot clobber anyone:

* labels go by JSON merge patch on ``metadata.labels`` naming only sro's keys (``null``
  removes one), so a concurrent label change by someone else is untouched;
* taints are a list, which a merge patch replaces whole, so the patch carries the node's
  ``resourceVersion`` (a concurrent change ends in 409 and a retry from fresh state), and
  the taints sro added are recorded in the node annotation ``sro.dev/taints.<sr>``: a
  taint that was already there before sro wanted it (an administrator's) is never
  recorded, so it is never removed.

A cordon or uncordon (``NodeChange.unschedulable``, for driver upgrades) carries the
node's ``resourceVersion`` too, for the same reason as taints.

``sro.engine.node_writes`` sends what these build.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sro.model import records, views

TAINTS_ANNOTATION_PREFIX = "sro.dev/taints."


@dataclass(frozen=True, kw_only=True)
class NodeChange:
    """What to change on one node. ``None`` values remove a label or annotation; ``taints``
    is the SpecialResource's taints the node should carry (``()``: none of them), or ``None``
    when its taints are already right."""

    node: str
    labels: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}))
    annotations: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}))
    taints: tuple[views.Taint, ...] | None = None
    unschedulable: bool | None = None
    """Cordon (True) or uncordon (False) the node, guarded by its resourceVersion (an
    administrator's cordon made meanwhile is a 409, not overwritten); None: leave it."""

    def patch(self) -> dict[str, Any]:
        """The JSON merge patch for the labels and annotations (taints: ``node_patches``)."""
        body: dict[str, Any] = {"metadata": {}}
        if self.labels:
            body["metadata"]["labels"] = dict(self.labels)
        if self.annotations:
            body["metadata"]["annotations"] = dict(self.annotations)
        return body


def taints_annotation(sr_name: str) -> str:
    """The node annotation listing the taints SpecialResource ``sr_name`` put on the node."""
    return TAINTS_ANNOTATION_PREFIX + sr_name


def owned_taints(node: views.NodeView, sr_name: str) -> tuple[views.Taint, ...]:
    """The taints sro recorded as its own on ``node`` for ``sr_name`` (unreadable: none)."""
    raw = node.annotations.get(taints_annotation(sr_name), "")
    if not raw:
        return ()
    return _parsed(raw)


def _read(raw: str) -> tuple[views.Taint, ...]:
    items = records.loads(raw)
    if not isinstance(items, list):
        return ()
    return tuple(
        views.Taint(
            key=str(t.get("key", "")), value=str(t.get("value", "") or ""), effect=str(t.get("effect", ""))
        )
        for t in items
        if isinstance(t, Mapping)
    )


# Nodes mostly carry one of a few records (none, the driver-missing taint).
_parsed = records.short_cached(_read, longest=1024, size=64)


def label_patch(node: views.NodeView, changes: Mapping[str, str | None]) -> dict[str, Any] | None:
    """The merge patch setting (value) or removing (None) labels, or None if already so."""
    effective = {k: v for k, v in changes.items() if node.labels.get(k) != v}
    if not effective:
        return None
    return {"metadata": {"labels": effective}}


def taints_change(node: views.NodeView, *, sr_name: str, wanted: Iterable[views.Taint]) -> bool:
    """Whether ``taint_patch`` would patch ``node`` (asked of every selected node on every
    pass, so the patch and its JSON record are not built to answer it)."""
    return _taint_change(node, sr_name=sr_name, wanted=wanted) is not None


def _taint_change(
    node: views.NodeView, *, sr_name: str, wanted: Iterable[views.Taint]
) -> tuple[list[views.Taint], list[views.Taint]] | None:
    """``node``'s taints after the change and sro's record of its own after it; None when
    nothing would change (see ``taint_patch``)."""
    wanted_set = list(dict.fromkeys(wanted))
    owned = set(owned_taints(node, sr_name))
    if not wanted_set and not owned:
        return None  # nothing wanted, nothing recorded: most nodes, every pass
    current = node.taints
    # Nothing to remove (every recorded taint still wanted) and nothing to add (every
    # wanted taint there): the record then stays as it is too.
    if owned.issubset(wanted_set) and all(t in current for t in wanted_set):
        return None
    remove = {t for t in owned if t not in wanted_set}
    add = [t for t in wanted_set if t not in current]
    keep_owned = {t for t in owned if t in wanted_set and t in current}
    new_owned = sorted(keep_owned | set(add), key=lambda t: (t.key, t.effect, t.value))
    return [t for t in current if t not in remove] + add, new_owned


def taint_patch(
    node: views.NodeView, *, sr_name: str, wanted: Iterable[views.Taint]
) -> dict[str, Any] | None:
    """The patch that makes ``node`` carry exactly ``wanted`` of sro's taints for ``sr_name``.

    Taints sro recorded and no longer wants are removed; wanted taints missing from the
    node are added and recorded; a wanted taint already present but not recorded was
    someone else's first and stays theirs. None when nothing would change.
    """
    change = _taint_change(node, sr_name=sr_name, wanted=wanted)
    if change is None:
        return None
    taints, new_owned = change
    key = taints_annotation(sr_name)
    record = json.dumps([t.to_body() for t in new_owned], sort_keys=True) if new_owned else None
    patch: dict[str, Any] = {
        "metadata": {"resourceVersion": node.resource_version, "annotations": {key: record}},
        "spec": {"taints": [t.to_body() for t in taints]},
    }
    if not node.resource_version:
        del patch["metadata"]["resourceVersion"]
    return patch


def for_change(node: views.NodeView, change: NodeChange, *, sr_name: str) -> dict[str, Any] | None:
    """The one merge patch carrying out the planner's ``change`` on ``node`` (None: nothing to do).

    Labels and annotations are taken as planned, minus what the node already shows;
    ``change.taints`` (the SpecialResource's taints the node should carry, None to leave
    them) goes through ``taint_patch``, which knows which taints are sro's to remove.
    """
    patch: dict[str, Any] = {"metadata": {}}
    if change.taints is not None:
        patch = taint_patch(node, sr_name=sr_name, wanted=change.taints) or patch
    labels = {k: v for k, v in change.labels.items() if node.labels.get(k) != v}
    annotations = {k: v for k, v in change.annotations.items() if node.annotations.get(k) != v}
    if labels:
        patch["metadata"]["labels"] = labels
    if annotations:
        patch["metadata"].setdefault("annotations", {}).update(annotations)
    if change.unschedulable is not None and node.unschedulable != change.unschedulable:
        patch.setdefault("spec", {})["unschedulable"] = change.unschedulable
        if node.resource_version:
            patch["metadata"]["resourceVersion"] = node.resource_version
    if not patch["metadata"] and "spec" not in patch:
        return None
    return patch
