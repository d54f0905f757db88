"""Lifecycle decisions (contract section 6): node labels and taints, kernel changes, retries,
what to delete, and tearing everything down (failed pods: ``pod_retries``).

Node bookkeeping for SpecialResource ``<sr>``:

* label ``<sr>.sro.dev/<state>: "ready"`` for each state complete on the node, and
  ``<sr>.sro.dev/complete: "true"`` once all are; the render core makes later states'
  workloads require these labels, so the labels are the gate of the walk;
* annotation ``sro.dev/kernel.<sr>``: the kernel group (``KernelGroup.key``) the node was
  walked with. When the node's group differs from it, the kernel changed: that pass clears
  the node's state labels, deletes its per-node pods and records the new group, so the node
  walks every state again from the first. (An annotation, not a label: a kernel group does
  not fit a label value, and a state may be called ``kernel``.)
* annotation ``sro.dev/logs.<sr>``: the uids of the node's pods whose ``wait-for-logs``
  match sro has seen (space-separated), so a restarted operator need not find the match
  in their logs again (``readiness``). Written only along with a label change (the one
  that completes the state, or a reset), never in a patch of its own;
* the SpecialResource's taints, put on every selected node and taken off every other:
  ``node_patches.NodeChange.taints`` says which of its taints the node should carry, and
  ``node_patches.taint_patch`` (which records what sro added, so an administrator's own
  taint is never removed) turns that into the patch.

Every function here is pure; the engine executes the ``NodeChange``s and ``Deletion``s.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from sro import errors
from sro.model import desired, progress, records, views
from sro.plan import live_records, node_patches, walk_memo
from sro.plan import observed as observed_

COMPLETE = "complete"
UPGRADE = "upgrade"
READY_VALUE = "ready"
COMPLETE_VALUE = "true"
ON_DELETE = "OnDelete"
NODE = ("v1", "Node")
DAEMONSET = ("apps/v1", "DaemonSet")

# Failed pods are recreated after 10 s, doubling per attempt, at most every 5 minutes.

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")

# Apply order: what others need first. Deletion runs it backwards.
_KIND_RANK = {
    "Namespace": 0,
    "CustomResourceDefinition": 1,
    "PriorityClass": 2,
    "ServiceAccount": 2,
    "ClusterRole": 2,
    "Role": 2,
    "ClusterRoleBinding": 3,
    "RoleBinding": 3,
    "ConfigMap": 4,
    "Secret": 4,
    "Service": 4,
}
_WORKLOADS = frozenset({"DaemonSet", "Deployment", "StatefulSet", "Job", "Pod"})


def kind_rank(kind: str) -> int:
    """Namespace, CRDs, RBAC and accounts, config and services, other kinds, workloads."""
    return _KIND_RANK.get(kind, 6 if kind in _WORKLOADS else 5)


def label_prefix(sr_name: str) -> str:
    return f"{sr_name}{views.SR_LABEL_DOMAIN}"


def kernel_annotation(sr_name: str) -> str:
    return f"sro.dev/kernel.{sr_name}"


def logs_annotation(sr_name: str) -> str:
    """The node annotation listing the pods whose log match sro has seen (module docstring)."""
    return f"sro.dev/logs.{sr_name}"


def _check_key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    prefix_ok = len(prefix) <= 253 and all(
        len(part) <= 63 and _DNS_LABEL.fullmatch(part) for part in prefix.split(".")
    )
    if not (prefix_ok and len(name) <= 63 and _LABEL_NAME.fullmatch(name)):
        raise errors.RecipeInvalid(f"{key!r} is not a valid label key")
    return key


@functools.lru_cache(maxsize=4096)
def state_label(sr_name: str, state: str) -> str:
    """``<sr>.sro.dev/<state>``; ``RecipeInvalid`` when that is no valid label key."""
    return _check_key(label_prefix(sr_name) + state)


@functools.lru_cache(maxsize=1024)
def complete_label(sr_name: str) -> str:
    return _check_key(label_prefix(sr_name) + COMPLETE)


@dataclass(frozen=True, kw_only=True, order=True)
class Deletion:
    """Delete ``ref``, only if its uid is still ``uid`` (when known): a recreated object stays."""

    ref: desired.ObjectRef
    uid: str = ""
    reason: str = field(default="", compare=False)


def _diff(
    current: Mapping[str, str], want: Mapping[str, str], *, owned: Iterable[str]
) -> dict[str, str | None]:
    change: dict[str, str | None] = {k: v for k, v in want.items() if current.get(k) != v}
    change.update({k: None for k in owned if k not in want})
    return change


def _taints(
    node: views.NodeView, *, sr_name: str, wanted: tuple[views.Taint, ...]
) -> tuple[views.Taint, ...] | None:
    return wanted if node_patches.taints_change(node, sr_name=sr_name, wanted=wanted) else None


@dataclass(frozen=True, kw_only=True)
class NodeChanges:
    """``node_changes``' answer, and the memory the next plan may reuse (``walk_memo``)."""

    changes: tuple[node_patches.NodeChange, ...]
    memo: walk_memo.Memo


def node_changes(
    wanted: desired.DesiredState, seen: observed_.Observed, walked: progress.Walk
) -> NodeChanges:
    """Label, annotation and taint changes for selected and departed nodes, by node name.

    A selected node's change depends only on its walk, its cached record, its kernel group
    and the SpecialResource's taints: a node whose walk this plan reused and whose record
    is unchanged gets the change the last plan computed (``walk_memo.Memo.changed``)."""
    sr = wanted.sr_name
    prefix, annotation = label_prefix(sr), kernel_annotation(sr)
    keys = {s: state_label(sr, s) for s in walked.order}
    done = complete_label(sr)
    upgrading = label_prefix(sr) + UPGRADE  # the upgrade walk's own (``sro.plan.upgrade``)
    memo = walked.memo if isinstance(walked.memo, walk_memo.Memo) else walk_memo.EMPTY
    pass_key = (sr, walked.order, seen.taints, memo.key)
    remembered: dict[str, walk_memo.Changed] = {}
    changes: list[node_patches.NodeChange] = []
    for name in wanted.nodes:
        cached = seen.nodes.get(name)
        if cached is not None:  # as of sro's own last patch: what it just wrote is not sent again
            cached = seen.own_view(cached, sr_name=sr)
        walked_here = memo.nodes.get(name)
        known = seen.walk_memo.changed(name, key=pass_key, view=cached, walked=walked_here)
        if known is None:
            change = _node_change(
                name, cached, wanted=wanted, seen=seen, walked=walked, keys=keys, done=done,
                prefix=prefix, annotation=annotation, upgrading=upgrading,
            )  # fmt: skip
            if walked_here is not None:
                known = walk_memo.Changed(view=cached, walked=walked_here, change=change)
        else:
            change = known.change
        if known is not None:
            remembered[name] = known
        if change is not None:
            changes.append(change)
    selected = set(wanted.nodes)
    changes.extend(strip_nodes(sr, (n for n in seen.departed if n.name not in selected)))
    return NodeChanges(
        changes=tuple(sorted(changes, key=lambda c: c.node)),
        memo=dataclasses.replace(memo, changes=remembered, changes_key=pass_key),
    )


def _node_change(
    name: str,
    cached: views.NodeView | None,
    *,
    wanted: desired.DesiredState,
    seen: observed_.Observed,
    walked: progress.Walk,
    keys: Mapping[str, str],
    done: str,
    prefix: str,
    annotation: str,
    upgrading: str,
) -> node_patches.NodeChange | None:
    """One selected node's change (``node_changes``), None when it needs none."""
    node = cached or views.NodeView(name=name)
    want = {keys[s]: READY_VALUE for s in walked.complete_states(name)}
    if len(want) == len(keys):
        want[done] = COMPLETE_VALUE
    mine = [k for k in node.labels_of(prefix) if k != upgrading]
    labels = _diff(node.labels, want, owned=mine)
    group = wanted.kernel_groups.get(name)
    # The kernel group the labels were earned on: written with the first label (a node
    # with no label of ours has nothing a kernel change could invalidate), so a fresh
    # node's first patch is its first label, not a patch of its own.
    recorded = mine or annotation in node.annotations or any(v is not None for v in labels.values())
    notes = {annotation: group.key} if group and recorded else {}
    matched = logs_annotation(wanted.sr_name)
    if labels:  # the record of log matches rides along with a label change
        uids = " ".join(walked.matched.get(name, ()))
        if uids:
            notes[matched] = uids
    owned = (matched,) if labels and matched in node.annotations else ()
    annotations = _diff(node.annotations, notes, owned=owned)
    taints = _taints(node, sr_name=wanted.sr_name, wanted=seen.taints)
    if labels or annotations or taints is not None:
        return node_patches.NodeChange(node=name, labels=labels, annotations=annotations, taints=taints)
    return None


def upgrade_annotation(sr_name: str) -> str:
    """The node annotation recording a driver upgrade's walk (``sro.plan.upgrade``)."""
    return f"sro.dev/upgrade.{sr_name}"


def cordoned_by_sro(node: views.NodeView, sr_name: str) -> bool:
    """Whether the node's upgrade record says sro cordoned it (and it still is)."""
    record = records.loads(node.annotations.get(upgrade_annotation(sr_name), "") or "{}")
    return node.unschedulable and isinstance(record, dict) and record.get("cordoned") is True


def node_marks(sr_name: str) -> tuple[str, ...]:
    """Every node annotation SpecialResource ``sr_name`` may write: its kernel group, log
    matches, upgrade record and taint record. The one list of them, so what finds a node
    carrying the SpecialResource's marks (``inputs.departed``, ``inputs.carrying``) and what
    strips them (``strip_nodes``) never disagree."""
    return (
        kernel_annotation(sr_name),
        logs_annotation(sr_name),
        upgrade_annotation(sr_name),
        node_patches.taints_annotation(sr_name),
    )


def strip_nodes(sr_name: str, nodes: Iterable[views.NodeView]) -> tuple[node_patches.NodeChange, ...]:
    """Remove everything this SpecialResource put on these nodes (labels, annotations,
    taints), and undo a cordon an upgrade of it left (only one sro made)."""
    prefix, marks = label_prefix(sr_name), node_marks(sr_name)
    changes = []
    for node in nodes:
        labels = {k: None for k in node.labels_of(prefix)}
        # The taint record goes too, also when it is unreadable (then ``taint_patch`` finds
        # no taint of sro's to take off, and the record would stay for ever).
        annotations = {a: None for a in marks if a in node.annotations}
        new_taints = _taints(node, sr_name=sr_name, wanted=())
        uncordon = False if cordoned_by_sro(node, sr_name) else None
        if labels or annotations or new_taints is not None or uncordon is not None:
            changes.append(
                node_patches.NodeChange(
                    node=node.name,
                    labels=labels,
                    annotations=annotations,
                    taints=new_taints,
                    unschedulable=uncordon,
                )
            )
    return tuple(changes)


_PENDING = progress.NodeState(phase=progress.Phase.PENDING)


def controller_pod(seen: observed_.Observed, ref: desired.ObjectRef) -> bool:
    if ref.kind != "Pod":
        return False
    pod = seen.pod(ref)
    return pod is not None and pod.owner_kind in live_records.POD_CONTROLLERS


def stale_objects(
    wanted: desired.DesiredState,
    seen: observed_.Observed,
    *,
    also: Sequence[desired.DesiredObject] = (),
) -> tuple[Deletion, ...]:
    """Owned objects the cluster has that are not desired any more (not already going);
    ``also``: objects desired besides ``wanted``'s (this pass's build Jobs)."""
    refs = wanted.refs
    extra = {o.ref for o in also}
    return tuple(
        Deletion(ref=ref, uid=live.uid, reason="no longer desired")
        for ref, live in seen.objects.items()
        if ref not in refs and ref not in extra and not live.deleting and not controller_pod(seen, ref)
    )


def why_closed(order: Sequence[str], states: Mapping[str, progress.NodeState]) -> str:
    """What holds a node's later states closed: its first open state not complete (a pod
    not ready, a log not matched...), else the reason of its first Pending state (a reset);
    the log line of a deletion says it, so an unexpected one can be traced to its cause."""
    for name in order:
        ns = states.get(name, _PENDING)
        if ns.open and ns.phase is not progress.Phase.COMPLETE:
            return (
                f" ({name} is {ns.phase.value}: {ns.reason})"
                if ns.reason
                else f" ({name} is {ns.phase.value})"
            )
    first = next((states[n] for n in order if n in states and not states[n].open), None)
    return f" ({first.reason})" if first is not None and first.reason else ""


def fresh_enough(deletion: Deletion, seen: observed_.Observed) -> bool:
    """Whether the caches behind ``deletion`` have seen sro's own last writes, so the
    decision to delete does not rest on a picture older than what sro itself did.

    Every deletion rests on its own kind's cache (is it still there, still undesired?);
    a pod's also on the Nodes (is its state open there?) and the DaemonSets (is it of an
    older template?). A deletion that does not pass waits for the next pass; the uid
    precondition keeps one that does from ever removing a newer object of the same name.
    """
    kinds = {(deletion.ref.api_version, deletion.ref.kind)}
    if deletion.ref.kind == "Pod":
        kinds |= {NODE, DAEMONSET}
    return not (kinds & seen.lagging)


def downstream(states: Sequence[desired.StateSpec]) -> Mapping[str, frozenset[str]]:
    """For each state, every state that comes after it, directly or not: what a refused
    write of that state blocks too (the planner may think them complete, since their
    objects may not gate readiness)."""
    after = {s.name: set(s.after) for s in states}
    out: dict[str, frozenset[str]] = {}
    for spec in states:
        found: set[str] = set()
        frontier = {spec.name}
        while frontier:
            frontier = {n for n, befores in after.items() if befores & frontier and n not in found}
            found |= frontier
        out[spec.name] = frozenset(found)
    return MappingProxyType(out)


def held_back(
    changes: Iterable[node_patches.NodeChange], *, sr_name: str, blocked: frozenset[str]
) -> tuple[node_patches.NodeChange, ...]:
    """``changes`` without the ready labels of ``blocked`` states (left unwritten after a
    refusal) nor ``complete``, whatever the walk thought of them; removals stay."""
    if not blocked:
        return tuple(changes)
    held = {state_label(sr_name, s) for s in blocked} | {complete_label(sr_name)}
    return tuple(
        dataclasses.replace(
            c, labels={k: v for k, v in c.labels.items() if not (k in held and v is not None)}
        )
        for c in changes
    )


def deletion_order(deletions: Iterable[Deletion]) -> tuple[Deletion, ...]:
    """Workloads first, the namespace and CRDs last; one entry per object."""
    unique = {d.ref: d for d in deletions}
    return tuple(sorted(unique.values(), key=lambda d: (-kind_rank(d.ref.kind), d.ref)))
