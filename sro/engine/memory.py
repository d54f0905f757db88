"""What one SpecialResource's passes hand to the next, and how each pass updates it.

Level-triggered: every pass recomputes everything from the caches. What is kept between
passes is bookkeeping whose loss on a restart costs a retry or a log fetch (failed-pod
retries, fetched log tails, when a transient write failure began), restarts the grace
period of a node held after losing its labels (``plan.node_loss``), or saves work a pass
would otherwise redo (the last render, the last walk, the bodies last sent). Each step of
a pass updates its part here, so what outlives a pass is read in one place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from sro.cache import store as store_
from sro.engine import compute, execute, pod_logs, ports
from sro.engine import sent as sent_
from sro.model import bodies, desired, views
from sro.model import specialresource as sr_model
from sro.plan import actions, finish, inputs, node_loss, pods_seen, walk_memo
from sro.plan import observed as observed_

DELETED_KEPT = 16_384
"""Uids of pods sro deleted that the memory keeps (``Memory.deleted``): a deletion's watch
event comes within seconds, so the last this many are plenty."""


def _no_pass() -> None:
    return None


@dataclass(kw_only=True)
class Memory:
    """One SpecialResource's memory (the module docstring says what each part is for)."""

    retries: Mapping[desired.ObjectRef, observed_.Retry] = field(default_factory=dict)
    logs: dict[str, Mapping[str, str]] = field(default_factory=dict)
    reads: pod_logs.Reads = field(default_factory=lambda: pod_logs.Reads(wake=_no_pass))  # filling ``logs``
    log_reads: dict[str, datetime] = field(default_factory=dict)  # when each pod's tails were last asked for
    transient: finish.Transient | None = None
    summary: tuple[object, ...] = ()  # what peers saw of it last time (engine.peers.Peers.note)
    sent: sent_.Sent = field(default_factory=sent_.Sent)  # writes.apply_objects
    rendered: compute.Rendered | None = None  # the last render, reused while its inputs hold
    held: node_loss.Memory = node_loss.EMPTY  # nodes selected last time, and those held since
    drained: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # what drains left, by node
    jobs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # jobs still running, by node
    rechecked: frozenset[str] = frozenset()  # build Jobs whose image was looked up again since
    expected: compute.Rendered | None = None  # the last render of spec.preflight's kernels
    walked: walk_memo.Memo = walk_memo.EMPTY  # what the last walk may hand the next
    walk_cursors: tuple[store_.Cursor, store_.Cursor] | None = None  # the caches ``walked`` read
    node_answers: dict[str, observed_.NodeAnswer] = field(default_factory=dict)  # what node patches returned
    pods: pods_seen.PodsSeen | None = None  # the operand namespace's pods as last read
    pods_cursors: tuple[store_.Cursor, store_.Cursor] | None = None  # the caches ``pods`` read
    gone_cursor: int | None = None  # how far the pods cache's log of succeeded pods gone was read
    deleted: dict[str, None] = field(default_factory=dict)  # uids of pods sro deleted, oldest first
    deleting: dict[pods_seen.Key, str] = field(default_factory=dict)
    """Pods sro deleted (the API server took the deletion) that the pod cache does not yet
    show deleting or gone, by (namespace, name), with their uid: a pass reads them as
    deleting. A pass right after the one that deleted a finished validation pod (a reset)
    would otherwise find it succeeded, for the state that just reopened, and record it."""
    proven: frozenset[desired.ObjectRef] = frozenset()  # proofs of pods gone the last plan handed on
    pruned_for: desired.DesiredState | None = None  # the render ``sent`` was last pruned to

    def close(self) -> None:
        """The SpecialResource is gone or no longer reconciled: stop its reads in flight."""
        self.reads.close()

    def answers(self, nodes: Iterable[views.NodeView]) -> Mapping[str, observed_.NodeAnswer]:
        """``Observed.node_answers``: what sro's patches of ``nodes`` (the selected ones)
        returned, where the node cache does not show it yet; the rest is forgotten (the
        cache shows it, or something later), so a settled fleet keeps none."""
        if not self.node_answers:
            return self.node_answers
        ahead = {}
        for node in nodes:
            written = self.node_answers.get(node.name)
            if written is not None and bodies.version_number(node.resource_version) < written.version:
                ahead[node.name] = written
        if len(ahead) != len(self.node_answers):
            self.node_answers = ahead
        return self.node_answers

    def pods_seen(
        self, reader: ports.Reader, sr: sr_model.SpecialResource, *, owners: frozenset[str]
    ) -> pods_seen.PodsSeen:
        """The operand namespace's pods for this pass: the last pass's read patched with
        the pods the cache changed since, or read afresh when the cache's journal cannot
        say (the first pass, a journal overrun, another store after a restart of it) or
        the SpecialResource moved to another namespace; the pods sro deleted shown
        deleting until the cache shows it (``deleting``)."""
        at = reader.cursors()
        since = reader.changed_since(self.pods_cursors)[1] if self.pods_cursors is not None else None
        # Read again whether or not the cache changed them: each is shown deleting, or as
        # the cache has it once the cache caught up.
        own = tuple(self.deleting)
        for key in own:
            pod = reader.pod(*key)
            if pod is None or pod.uid != self.deleting[key] or pod.deleting:
                del self.deleting[key]  # the cache shows the deletion now, or a pod made since
        if self.pods is None or since is None or not self.pods.fits(sr):
            shown = (self._shown(p) for p in reader.pods(sr.spec.namespace))
            read = pods_seen.read(shown, sr=sr, owners=owners)
        else:
            changed = (*since.keys, *own)
            read = pods_seen.patched(
                self.pods,
                sr=sr,
                owners=owners,
                changed=changed,
                find=lambda key: None if (pod := reader.pod(*key)) is None else self._shown(pod),
            )
        self.pods, self.pods_cursors = read, at
        return read

    def _shown(self, pod: views.PodView) -> views.PodView:
        """``pod`` as the pass reads it: deleting, if sro's deletion of it is not cached yet."""
        if not self.deleting or self.deleting.get((pod.namespace, pod.name)) != pod.uid:
            return pod
        return dataclasses.replace(pod, deleting=True)

    def finished(
        self, reader: ports.Reader, sr: sr_model.SpecialResource, *, live: Container[tuple[str, str]]
    ) -> frozenset[desired.ObjectRef]:
        """``Observed.finished`` for this pass: the pods the cache saw succeed and go since
        the last read (none on the first pass of this memory: older news was read by a pass
        of another process, or concerns an earlier life of the node), and the proofs the
        last plan handed on (``Plan.finished``) whose pod was not made again since (``live``:
        the (namespace, name) of each pod of its namespace this pass reads)."""
        self.gone_cursor, gone = reader.pods_gone(self.gone_cursor)
        if not gone and not self.proven:
            return frozenset()
        return inputs.finished_pods(gone, sr=sr, live=live, deleted=self.deleted, proven=self.proven)

    def touched(self, reader: ports.Reader) -> walk_memo.Touched | None:
        """``Observed.touched``: what the node and pod caches changed since the pass whose
        walk ``walked`` is (None: not known, or no such walk)."""
        if self.walk_cursors is None or self.walked is walk_memo.EMPTY:
            return None
        nodes, pods = reader.changed_since(self.walk_cursors)
        if nodes is None or pods is None:
            return None
        changed, on = pods.keys, pods.values
        if self.deleting:  # shown deleting by this memory, not by the cache (``deleting``)
            changed = changed | frozenset(self.deleting)
            record = self.pods.pods if self.pods is not None else {}
            on = on | frozenset(p.node for key in self.deleting if (p := record.get(key)) is not None)
        return walk_memo.Touched(nodes=frozenset(name for _, name in nodes.keys), pods=changed, pod_nodes=on)

    def observed(self, seen: observed_.Observed) -> None:
        """After observing: keep the log tails, and when they were read, of pods that still exist."""
        live_uids = {p.uid for p in seen.pods}
        for uid in [uid for uid in self.logs if uid not in live_uids]:
            del self.logs[uid]  # in place: reads in flight fill this very dict
        self.log_reads = {uid: at for uid, at in self.log_reads.items() if uid in live_uids}

    def planned(
        self,
        planned: actions.Plan,
        *,
        now: datetime,
        cursors: tuple[store_.Cursor, store_.Cursor] | None = None,
    ) -> None:
        """After planning: the retry bookkeeping, when the tails this pass fetches were
        asked for (``now``), and what the walk hands the next (``cursors``: where the node
        and pod caches stood when the pass read them)."""
        self.retries = dict(planned.retries)
        self.log_reads.update((r.uid, now) for r in planned.logs_needed)
        self.proven = planned.finished
        self.deleted.update((d.uid, None) for d in planned.delete if d.uid and d.ref.kind == "Pod")
        for uid in list(self.deleted)[: max(len(self.deleted) - DELETED_KEPT, 0)]:
            del self.deleted[uid]  # its deletion was long seen
        kept_walk = planned.walk.memo if planned.walk is not None else None
        self.walked = kept_walk if isinstance(kept_walk, walk_memo.Memo) else walk_memo.EMPTY
        self.walk_cursors = cursors

    def executed(self, executed: execute.Executed, *, wanted: desired.DesiredState) -> None:
        """After the writes: what drains and jobs left, what node patches returned (for
        selected nodes), and the bodies sent of objects still desired."""
        self.drained = executed.drained
        self.deleting.update(
            ((d.ref.namespace, d.ref.name), d.uid) for d in executed.deleted if d.ref.kind == "Pod" and d.uid
        )
        selected = set(wanted.nodes)
        answers = {n: w for n, w in self.node_answers.items() if n in selected}
        for name, answer in executed.node_answers.items():
            if name not in selected:
                continue
            last = answers.get(name)
            if answer.unschedulable is None and last is not None and last.unschedulable is not None:
                # This patch left spec.unschedulable as sro's last patch, one the cache did
                # not show yet at this pass's start, set it (``answers``).
                answers[name] = dataclasses.replace(answer, unschedulable=last.unschedulable)
            else:
                answers[name] = answer
        self.node_answers = answers
        self.jobs = executed.jobs
        if wanted is not self.pruned_for:  # a render reused wants every object it wanted
            self.sent.keep({o.ref for o in wanted.objects})
            self.pruned_for = wanted
