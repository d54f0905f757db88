"""Verdicts for the walk: each object of a state judged on a node, from what the cluster shows.

The walk (``sro.plan.walk``) asks, state by state and node by node, what the objects that
concern a node say; ``Judge`` answers, computing what is the same on every node (a
state's cluster-wide objects, a DaemonSet's current revision, the objects of a kernel
group) once per pass, and says what each node's answer reads (``node_key``,
``pass_key``: ``walk_memo`` reuses a node's walk while they hold).

On nodes not in ``upgrading`` (``sro.plan.upgrade``: those whose driver pod sro is
replacing), a pod of an older template of an ``OnDelete`` DaemonSet still counts: the
node runs its previous driver until its turn. Objects with ``wait: false`` never gate.

A DaemonSet pod whose ``Ready`` the node controller withdrew (its kubelet stopped
reporting; ``views.PodView.ready_withdrawn``) still counts: a heartbeat gap is no news of
the driver, and resetting every later state would delete and re-run their pods. A pod the
kubelet itself reports not ready (a restart after a reboot, a crash) resets as before.

So does a Deployment's or StatefulSet's pod (``readiness.withdrawn_only``): their status
counts it lost, and the state's label would come off every node.

A per-node pod that is gone, or that succeeded and is being deleted, while its node
carries its state's ready label succeeded before and was then deleted by someone else:
the pod garbage collector above all (it deletes the oldest finished pods once a cluster
holds more than ``--terminated-pod-gc-threshold``, 12,500 by default: three validations
on 4,200 nodes). The label is sro's record of that success, so the state stays complete
there and the pod is not made again; judging it absent would reset every later state on
the node and take its device plugin away. The label is read as of sro's own last write
to the node: from the cache, or while the cache lags that write, from what the patch
returned (``Observed.own_labels``); so one sro just removed (a reset) is never taken for a
record, and one it just set counts before the watch brings it. Removing the label by
hand runs the pod again. A pod of the state that runs once for the cluster is recorded
alike by the label on any selected node.

A ``wait-for-logs`` match is recorded on the node by the uid of the pod that printed it
(``lifecycle.logs_annotation``, ``Walk.matched``), so a restarted operator takes it as
matched without reading its log again. On a node that holds no such record at all (walked
by a version of sro without it) and whose driver is not being replaced, a pod whose tails
this process has not read counts as matched while they are read if the node carries its
state's label (``readiness.logs_verdict``): a restart of the operator resets nothing
either way. A pod the record does not list, where there is one, waits for its own tail.

A per-node pod that failed keeps its state *Failed* on its node while sro backs off and
while its replacement runs (``observed.Retry``): only a replacement that succeeds is
progress, so the status does not flip to Progressing on every retry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sro.model import desired, views
from sro.plan import lifecycle, live_records, readiness, walk_memo
from sro.plan import observed as observed_


def concerns_node(obj: desired.DesiredObject, *, node: str, group: desired.KernelGroup | None) -> bool:
    """Whether a per-node object runs on ``node`` (whose kernel group is ``group``)."""
    if obj.node is not None:
        return obj.node == node
    return obj.kernel_group is None or obj.kernel_group == group


def _collected(pod: views.PodView | None) -> bool:
    """Gone, or going after it succeeded: what someone else's deletion of a per-node
    pod that ran leaves (a graceful delete is seen first as a deletion timestamp)."""
    return pod is None or (pod.deleting and pod.phase == "Succeeded")


def recorded(seen: observed_.Observed, *, sr_name: str, state: str, node: str) -> bool:
    """Whether ``node`` carries ``state``'s ready label as of sro's own last write to it
    (``Observed.own_labels``: a label sro just removed does not count)."""
    view = seen.nodes.get(node)
    if view is None:
        return False
    return seen.own_labels(view).get(lifecycle.state_label(sr_name, state)) == lifecycle.READY_VALUE


@dataclass(frozen=True, kw_only=True)
class Index:
    """The desired objects a walk judges, indexed by state and node: the same for every
    pass that walks the same objects (a render reused), so the walk's memory keeps it."""

    objects: tuple[desired.DesiredObject, ...]
    states: tuple[desired.StateSpec, ...]
    refs: Mapping[int, tuple[desired.DesiredObject, desired.ObjectRef]]
    shared: Mapping[str, list[desired.DesiredObject]]  # state -> its cluster-wide objects
    daemonsets: Mapping[str, list[desired.DesiredObject]]  # state -> its DaemonSets
    pinned: Mapping[tuple[str, str], list[desired.DesiredObject]]  # (state, node) -> its per-node objects
    pinned_on: Mapping[str, list[desired.DesiredObject]]  # node -> its per-node objects
    pinned_names: Mapping[str, list[tuple[str, str]]]  # the same, as ``Observed.pods_by_name`` keys
    named_for: Mapping[tuple[str, str], str]  # a per-node pod's (namespace, name) -> its node
    logs_states: tuple[str, ...]  # states with a ``wait-for-logs`` object: their labels stand for a read


def index(wanted: desired.DesiredState, last: object) -> Index:
    """``last`` when it indexed these very objects and states, else a new index."""
    if (
        isinstance(last, Index)
        and last.states == wanted.states
        and walk_memo.same(last.objects, wanted.objects)
    ):
        return last
    refs = {id(o): (o, o.ref) for o in wanted.objects}
    shared: dict[str, list[desired.DesiredObject]] = {s.name: [] for s in wanted.states}
    daemonsets: dict[str, list[desired.DesiredObject]] = {s.name: [] for s in wanted.states}
    pinned: dict[tuple[str, str], list[desired.DesiredObject]] = {}
    pinned_on: dict[str, list[desired.DesiredObject]] = {}
    pinned_names: dict[str, list[tuple[str, str]]] = {}
    logs_states: dict[str, None] = {}
    for o in wanted.objects:
        if not o.wait or o.state not in shared:
            continue
        if o.wait_for_logs is not None:
            logs_states[o.state] = None
        if o.node is not None:
            pinned.setdefault((o.state, o.node), []).append(o)
            pinned_on.setdefault(o.node, []).append(o)
            ref = refs[id(o)][1]
            pinned_names.setdefault(o.node, []).append((ref.namespace, ref.name))
        elif o.kind == "DaemonSet":
            daemonsets[o.state].append(o)
        else:
            shared[o.state].append(o)
    return Index(
        objects=wanted.objects, states=wanted.states, refs=refs, shared=shared, daemonsets=daemonsets,
        pinned=pinned, pinned_on=pinned_on, pinned_names=pinned_names, logs_states=tuple(logs_states),
        named_for={name: node for node, names in pinned_names.items() for name in names},
    )  # fmt: skip


class Judge:
    """Verdicts of one state's objects, cluster-wide ones computed once per state.

    Objects are indexed once (per state; per-node pods per state and node) so walking
    thousands of nodes stays linear in nodes times states.
    """

    def __init__(
        self,
        wanted: desired.DesiredState,
        seen: observed_.Observed,
        index: Index,
        upgrading: frozenset[str] | None = None,
    ) -> None:
        self._upgrading = upgrading
        self._wanted = wanted
        self._seen = seen
        self._shared = index.shared
        self._daemonsets = index.daemonsets
        self._pinned = index.pinned
        self._pinned_on = index.pinned_on
        self._pinned_names = index.pinned_names
        self._logs_states = index.logs_states
        self._matched_key = lifecycle.logs_annotation(wanted.sr_name)
        self._matched: dict[str, frozenset[str]] = {}
        self._cluster: dict[str, tuple[readiness.Verdict, ...]] = {}
        self._placed: dict[tuple[str, desired.KernelGroup | None], tuple[desired.DesiredObject, ...]] = {}
        self._group_facts: dict[desired.KernelGroup | None, tuple[object, ...]] = {}
        self._refs = index.refs
        self._live: dict[int, tuple[live_records.LiveObject | None, str]] = {}

    def _daemonset(self, obj: desired.DesiredObject) -> tuple[live_records.LiveObject | None, str]:
        """The live DaemonSet and its current revision's hash: the same on every node."""
        known = self._live.get(id(obj))
        if known is None:
            live = self._seen.objects.get(self._refs[id(obj)][1])
            current = self._seen.current_revision(live.uid) if live is not None and live.uid else None
            known = self._live[id(obj)] = (live, current.hash if current is not None else "")
        return known

    def _one(self, obj: desired.DesiredObject, node: str) -> readiness.Verdict:
        seen = self._seen
        ref = self._refs[id(obj)][1]
        if obj.kind == "DaemonSet":
            live, current_hash = self._daemonset(obj)
            pods = seen.daemonset_pods(ref, node)
            if pods and live is not None and live.uid:  # a recreated DaemonSet's old pods are not its own
                pods = tuple(p for p in pods if p.owner_uid in ("", live.uid))
            previous = self._upgrading is not None and node not in self._upgrading
            logged = obj.wait_for_logs is not None
            return readiness.daemonset_on_node(
                obj, live, pods, logs=seen.logs, previous_counts=previous, current_hash=current_hash,
                recorded=logged and self._label_stands_for_logs(obj.state, node),
                matched_before=self.matched_before(node) if logged else frozenset(),
            )  # fmt: skip
        live = seen.objects.get(ref)
        if obj.kind == "Pod":
            pod = seen.pod(ref)
            where = obj.node
            if _collected(pod) and (ref in seen.finished or self._recorded(obj.state, where)):
                return readiness.READY  # it succeeded, and then the pod garbage collector took it
            logged = obj.wait_for_logs is not None
            verdict = readiness.pod_verdict(
                obj, pod, logs=seen.logs,
                recorded=logged and where is not None and self._label_stands_for_logs(obj.state, where),
                matched_before=self.matched_before(where) if logged and where else frozenset(),
            )  # fmt: skip
            retry = seen.retries.get(ref)
            if retry is not None and verdict.outcome is readiness.Outcome.WAITING:
                # Backing off a failed pod, or waiting on its replacement, is no progress:
                # the state stays Failed, for the same reason, until a replacement succeeds.
                return readiness.failed(retry.reason or "Failed")
            return verdict
        return readiness.cluster_object(obj, live, seen.workload_pods_of(live) if live is not None else ())

    def recorded(self, state: str, node: str) -> bool:
        return recorded(self._seen, sr_name=self._wanted.sr_name, state=state, node=node)

    def _label_stands_for_logs(self, state: str, node: str) -> bool:
        """Whether ``state``'s ready label on ``node`` may stand for a log match not read
        yet: only where the node holds no record of matches at all (walked by a version
        of sro without it) and its driver is not being replaced (a new pod under a label
        the old one earned proves nothing)."""
        return not self._replacing(node) and not self.matched_before(node) and self.recorded(state, node)

    def _replacing(self, node: str) -> bool:
        """Whether a driver upgrade is replacing ``node``'s driver pod."""
        return self._upgrading is not None and node in self._upgrading

    def matched_before(self, node: str) -> frozenset[str]:
        """The uids of pods whose log match ``node`` records (``lifecycle.logs_annotation``)."""
        known = self._matched.get(node)
        if known is None:
            view = self._seen.nodes.get(node)
            raw = self._seen.own_annotation(view, self._matched_key) if view is not None else ""
            known = self._matched[node] = frozenset(raw.split())
        return known

    def _recorded(self, state: str, node: str | None) -> bool:
        """``recorded`` on ``node``; for a cluster-wide pod (None), ``recorded_anywhere``."""
        return self.recorded(state, node) if node is not None else self.recorded_anywhere(state)

    def recorded_anywhere(self, state: str) -> bool:
        """Whether any selected node carries ``state``'s ready label (``recorded``): a
        cluster-wide pod of the state succeeded, or the label would not be there."""
        return any(self.recorded(state, node) for node in self._wanted.nodes)

    def cluster(self, state: str) -> tuple[readiness.Verdict, ...]:
        if state not in self._cluster:
            self._cluster[state] = tuple(self._one(o, "") for o in self._shared[state])
        return self._cluster[state]

    def pass_key(self, order: Sequence[str]) -> tuple[object, ...]:
        """What every node's walk reads alike (``walk_memo``). The desired objects are not
        in it: each node's key holds its kernel group and the objects placed on it
        (``daemonset_facts``, its per-node ones), so a kernel's new DaemonSet, or a new
        revision of one, walks only that kernel's nodes again."""
        return (
            self._wanted.states,
            self._logs_states,
            tuple(self.cluster(state) for state in order),
            self._seen.retries,
            self._upgrading is None,
        )

    def daemonset_facts(self, group: desired.KernelGroup | None) -> tuple[object, ...]:
        """What a node of kernel ``group`` reads of the DaemonSets placed on it: each one
        as desired, and the uid, template generation, update strategy and current revision
        of it live (the same for every node of the group, so computed once per group)."""
        known = self._group_facts.get(group)
        if known is None:
            facts: list[object] = []
            for state in self._daemonsets:
                for obj in self._placed_on(state, group):
                    live, current = self._daemonset(obj)
                    made = live and (live.uid, live.template_generation, live.update_strategy)
                    facts.append((obj, made, current))
            known = self._group_facts[group] = (group, *facts)
        return known

    def node_key(self, node: str, *, reset: bool) -> walk_memo.NodeKey:
        """What only ``node``'s walk reads (``walk_memo``). Desired objects compare by
        identity first (``walk_memo.interned`` keeps unchanged ones), else by value."""
        seen = self._seen
        pods = seen.pods_by_node.get(node, ())
        mine = self._pinned_on.get(node, ())
        named = tuple(map(seen.pods_by_name.get, self._pinned_names.get(node, ())))
        finished = seen.finished
        collected = [
            self._refs[id(o)][1] in finished or self.recorded(o.state, node)
            for o, p in zip(mine, named, strict=True)
            if _collected(p)
        ]  # a list: the key is compared, never hashed
        logs = seen.logs
        if logs:  # the tails read of every pod the node's walk reads, in that order
            tails = tuple([logs.get(p.uid) for p in pods] + [logs.get(p.uid) for p in named if p is not None])
        else:
            tails = ()
        # A tail not read yet counts as matched where the node records it (``readiness``).
        records: list[object] = [self.recorded(state, node) for state in self._logs_states]
        if self._logs_states:
            records.append(self.matched_before(node))
        daemonsets = self.daemonset_facts(self._wanted.kernel_groups.get(node))
        return (reset, self._replacing(node), daemonsets, mine, pods, named, collected, tails, records)

    def outline_holds(
        self, key: walk_memo.NodeKey, node: str, *, reset: bool, same: dict[tuple[int, object], bool]
    ) -> bool:
        """Whether the parts of ``node``'s remembered ``key`` that no cache change shows
        still hold: its reset and upgrade, and the DaemonSets placed on its kernel group
        (``same``: those answers by the remembered facts and the group, computed once)."""
        if key[0] != reset or key[1] != self._replacing(node):
            return False
        group = self._wanted.kernel_groups.get(node)
        facts = key[2]
        held = same.get((id(facts), group))
        if held is None:
            held = same[(id(facts), group)] = facts == self.daemonset_facts(group)
        return held

    def _placed_on(self, state: str, group: desired.KernelGroup | None) -> tuple[desired.DesiredObject, ...]:
        """The DaemonSets of ``state`` on nodes of kernel ``group``: the same for its every node."""
        placed = self._placed.get((state, group))
        if placed is None:
            placed = tuple(o for o in self._daemonsets[state] if concerns_node(o, node="", group=group))
            self._placed[(state, group)] = placed
        return placed

    def on_node(self, state: str, node: str) -> list[readiness.Verdict]:
        verdicts = [*self.cluster(state)]
        for obj in self._placed_on(state, self._wanted.kernel_groups.get(node)):
            verdicts.append(self._one(obj, node))
        for obj in self._pinned.get((state, node), ()):
            verdicts.append(self._one(obj, node))
        return verdicts
