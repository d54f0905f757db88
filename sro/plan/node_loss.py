"""Patience with Node Feature Discovery: a selected node that loses its labels is held.

NFD's labels blink: an nfd-master restart on a large cluster removes a node's feature
labels and adds them back seconds later. Acting on the blink would take the node's stack
down (its labels, taints, per-node pods, and its kernel group's DaemonSet if it was the
last node of the group) only to build it again. So a node that was selected and stops
being selected, or whose kernel or OS label disappears, is *held* for
``spec.nodeLossGracePeriodSeconds``: the reconcile renders and plans with the labels it
had when last selected laid over its current view (sro's own labels as they are now),
and only when the period ends without the labels coming back is it let go. A kernel label
that *changes* is no blink: the new kernel is used at once (the kernel-change path).

``decide`` is pure: the current nodes, the memory the last pass left and the clock in,
the node views to render with, the nodes held (with when they are let go) and the next
memory out. The memory lives in the engine's process, so a restart restarts the clock of
every held node: a node found carrying this SpecialResource's marks without being
selected, and not remembered, is taken as lost now (its kernel read back from sro's
kernel-group annotation). That is conservative: a restart can only make the wait
longer, never remove anything early.

A change of the selector itself (an edited ``spec.nodeSelector``) is the administrator's
decision, not a blink: it forgets the memory and is acted on at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from types import MappingProxyType

from sro.model import crd_limits, selection, views
from sro.model import specialresource as sr_model
from sro.plan import inputs, lifecycle
from sro.status import body

GROUP_LABELS = (
    views.KERNEL_LABEL,
    views.OS_ID_LABEL,
    views.OS_VERSION_LABEL,
    views.OS_MAJOR_LABEL,
    views.OS_MINOR_LABEL,
)
"""The kernel and OS labels a node's kernel group is read from: one that disappears is held."""


@dataclass(frozen=True, kw_only=True)
class Remembered:
    """A node as last selected: the selection and kernel labels it carried, and since when
    it has been seen without them (None while it still carries them)."""

    labels: Mapping[str, str]
    lost_at: datetime | None = None
    view: object = field(default=None, compare=False, repr=False)
    """The cached record this was made of: the caches replace a node's record when it
    changes, so a node handed again as the very same record is judged as before at once."""


@dataclass(frozen=True, kw_only=True)
class Memory:
    """What one pass hands to the next: the selector it judged by (None before the first
    pass of this process), and the nodes it selected or holds."""

    selector: Mapping[str, str] | None = None
    nodes: Mapping[str, Remembered] = field(default_factory=dict)


EMPTY = Memory()


@dataclass(frozen=True, kw_only=True)
class Held:
    """A node kept as it was, until ``until``; ``missing`` names the labels it lost."""

    node: str
    until: datetime
    missing: tuple[str, ...]

    def to_status(self) -> body.HeldNode:
        return {
            "node": self.node,
            "until": self.until.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "missingLabels": list(self.missing[: crd_limits.HELD_LABELS_MAX]),
        }


@dataclass(frozen=True, kw_only=True)
class Decision:
    """The node views to render and plan with, who is held, and the counts of flaps
    ``seen`` (a node newly found without its labels), ``absorbed`` (its labels back within
    the period) and ``released`` (the period over: the node is let go)."""

    nodes: tuple[views.NodeView, ...]
    held: tuple[Held, ...]
    memory: Memory
    seen: int = 0
    absorbed: int = 0
    released: int = 0

    def due(self, now: datetime) -> float | None:
        """Seconds from ``now`` until the first held node is let go, or None."""
        if not self.held:
            return None
        return max(0.0, min((h.until - now).total_seconds() for h in self.held))

    def counts(self) -> dict[str, int]:
        """The flaps of this pass by outcome (``sro_node_label_flaps_total``)."""
        return {"seen": self.seen, "absorbed": self.absorbed, "released": self.released}

    def requeue(self, after: float | None, *, now: datetime) -> float | None:
        """The sooner of ``after`` (the pass's own requeue) and the first release."""
        delays = [d for d in (after, self.due(now)) if d is not None]
        return min(delays) if delays else None


def decide(
    nodes: Iterable[views.NodeView],
    memory: Memory,
    *,
    sr_name: str,
    selector: Mapping[str, str],
    grace: float,
    now: datetime,
) -> Decision:
    """Which nodes are held and the views to use for them (see the module docstring)."""
    current = tuple(nodes)
    first = memory.selector is None
    remembered = dict(memory.nodes) if memory.selector == selector else {}
    selected = selection.selected_names(current, selector)
    if first and grace > 0:
        for node in inputs.departed(sr_name, current, selected=selected):
            remembered[node.name] = _marked(node, sr_name=sr_name, selector=selector, now=now)
    keys = (*selector, *GROUP_LABELS)
    period = timedelta(seconds=grace)
    out: list[views.NodeView] = []
    held: list[Held] = []
    kept: dict[str, Remembered] = {}
    seen = absorbed = released = 0
    for node in current:
        before = remembered.get(node.name)
        if before is not None and before.view is node and before.lost_at is None:
            kept[node.name] = before  # the same record as the pass that selected it
            out.append(node)
            continue
        missing = () if before is None else _missing(node, before, selector=selector)
        if not missing:
            if before is not None and before.lost_at is not None:
                absorbed += 1
            if node.name in selected:
                labels = _relevant(node.labels, keys)
                same = before is not None and before.lost_at is None and before.labels == labels
                kept[node.name] = (
                    replace(before, view=node)
                    if same and before is not None
                    else Remembered(labels=labels, view=node)
                )
            out.append(node)
            continue
        assert before is not None
        lost_at = before.lost_at or now
        if before.lost_at is None:
            seen += 1
        if grace <= 0 or now >= lost_at + period:
            released += 1
            out.append(node)
            continue
        kept[node.name] = replace(before, lost_at=lost_at)
        held.append(Held(node=node.name, until=lost_at + period, missing=missing))
        out.append(_overlay(node, before.labels))
    return Decision(
        nodes=tuple(out),
        held=tuple(sorted(held, key=lambda h: (h.until, h.node))),
        memory=Memory(selector=MappingProxyType(dict(selector)), nodes=MappingProxyType(kept)),
        seen=seen,
        absorbed=absorbed,
        released=released,
    )


def for_sr(
    sr: sr_model.SpecialResource,
    nodes: Iterable[views.NodeView],
    memory: Memory,
    *,
    recipe_selector: Mapping[str, str],
    now: datetime,
) -> Decision:
    """``decide`` for a SpecialResource: its effective selector and its grace period."""
    return decide(
        nodes,
        memory,
        sr_name=sr.name,
        selector=selection.effective_selector(sr, recipe_default=recipe_selector),
        grace=sr.spec.node_loss_grace_seconds,
        now=now,
    )


def with_held(status: body.StatusBody, held: Sequence[Held]) -> body.StatusBody:
    """``status`` with ``heldNodes``: the first held nodes the CRD allows, soonest let go
    first (none: no field, so server-side apply drops it)."""
    if not held:
        return status
    return {**status, "heldNodes": [h.to_status() for h in held[: crd_limits.HELD_NODES_MAX]]}


def _missing(node: views.NodeView, before: Remembered, *, selector: Mapping[str, str]) -> tuple[str, ...]:
    """The labels whose loss holds a node: a selector label it no longer carries with the
    selected value, and a kernel or OS label that is gone (a changed one is not lost)."""
    lost = {k for k, v in selector.items() if node.labels.get(k) != v}
    lost.update(k for k in GROUP_LABELS if k in before.labels and k not in node.labels)
    return tuple(sorted(lost))


def _overlay(node: views.NodeView, remembered: Mapping[str, str]) -> views.NodeView:
    """The node with its remembered labels back, except a kernel or OS label it now has
    another value of (a changed kernel is acted on at once)."""
    labels = dict(node.labels)
    for key, value in remembered.items():
        if key in GROUP_LABELS and key in labels:
            continue
        labels[key] = value
    return replace(node, labels=MappingProxyType(labels))


def _relevant(labels: Mapping[str, str], keys: Iterable[str]) -> Mapping[str, str]:
    return {k: labels[k] for k in keys if k in labels}


def _marked(node: views.NodeView, *, sr_name: str, selector: Mapping[str, str], now: datetime) -> Remembered:
    """A node carrying this SpecialResource's marks that no pass remembers (the process
    restarted): lost now, with the selector's labels and the kernel its annotation records."""
    labels = dict(selector)
    kernel = node.annotations.get(lifecycle.kernel_annotation(sr_name), "").partition("|")[0]
    if kernel:
        labels[views.KERNEL_LABEL] = kernel
    return Remembered(labels=MappingProxyType(labels), lost_at=now)
