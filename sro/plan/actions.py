"""What one reconcile should do: the ``Plan`` the planner returns and the engine executes.

A record apart from ``sro.plan.planner``, which decides it, so that the engine, ``finish``
and the tests that read a plan need not import the whole planner. ``Plan`` holds:

  ``apply``    desired objects to apply now, in dependency order (namespace, CRDs, RBAC and
               accounts, config and services, other kinds, workloads): every object of a
               state open on at least one node (or already in the cluster: it opened
               before); a per-node pod only where its state is open *and* the node
               already carries the labels of its ``after`` states (the pod is pinned by
               ``nodeName``, so the kubelet, not the scheduler, checks its required
               affinity and would fail it; one whose labels this pass sets is in
               ``follow``);
               never a failed pod waiting for its retry; at most ``planner.PASS_WRITES`` per-node
               objects a pass (and as many ``node_labels``), the next pass at once;
  ``follow``   per-node objects whose node gets the missing ``after`` labels in this very
               pass (``node_labels``): ``followers`` picks those whose node's patch landed
               with them, and the engine applies them right after it, so a state that
               completes on a node starts the next one's pod in the same pass;
  ``delete``   ``lifecycle.Deletion``s: owned objects no longer desired, per-node pods of
               states not open on their node (they re-run when it reopens), failed pods
               whose backoff has passed, driver pods of an older pod template on the
               nodes whose upgrade reached ``replacing`` (``upgrade``) — workloads first;
  ``node_labels`` ``node_patches.NodeChange``s: state labels, the ``complete`` label, the
               kernel-group annotation and taints, for selected and departed nodes;
  ``opening``  the states ``apply`` writes to for the first time (none of their objects
               exists yet): the engine dry-runs all their objects before writing any;
  ``blocks``   for each state, the states that come after it: a state whose write is
               refused blocks these too (the engine leaves them unwritten, and
               ``lifecycle.held_back`` keeps their ready labels off);
  ``logs_needed`` pods whose log tails the engine must fetch into ``Observed.logs``;
  ``drains``   nodes whose upgrade is draining them (``upgrade.DrainRequest``): the engine
               evicts their pods and hands what is left back in ``Observed.drains``;
  ``job_checks`` nodes whose upgrade waits for their jobs (``upgrade_jobs.JobCheck``): the
               engine lists those still running into ``Observed.jobs``;
  ``requeue_after`` seconds until something time-based is due (a retry, a log poll, a
               recipe recheck), or ``None``: watches wake the engine for everything else;
  ``removed``  the objects of ``delete`` that are no longer desired: the ``ObjectsRemoved``
               Event names those the deletions carried out (``events.objects_removed``,
               built by ``finish`` and the engine's teardown once the answers are in);
  ``status``   the whole status body; ``events`` transition Events;
  ``retries``  the retry bookkeeping to hand back in the next ``Observed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from sro.model import desired, progress
from sro.plan import lifecycle, node_patches, upgrade_jobs, upgrade_records
from sro.plan import observed as observed_
from sro.status import events
from sro.status.body import StatusBody


@dataclass(frozen=True, kw_only=True)
class Plan:
    """Everything one reconcile should do; see the module docstring for each field."""

    apply: tuple[desired.DesiredObject, ...]
    delete: tuple[lifecycle.Deletion, ...]
    follow: tuple[Follower, ...] = ()
    node_labels: tuple[node_patches.NodeChange, ...]
    status: StatusBody
    events: tuple[events.Event, ...] = ()
    removed: tuple[desired.ObjectRef, ...] = ()
    logs_needed: tuple[progress.LogRequest, ...] = ()
    drains: tuple[upgrade_records.DrainRequest, ...] = ()
    job_checks: tuple[upgrade_jobs.JobCheck, ...] = ()
    recheck: tuple[tuple[str, str], ...] = ()
    requeue_after: float | None = None
    retries: Mapping[desired.ObjectRef, observed_.Retry] = field(default_factory=lambda: MappingProxyType({}))
    blocks: Mapping[str, frozenset[str]] = field(default_factory=lambda: MappingProxyType({}))
    opening: frozenset[str] = frozenset()
    walk: progress.Walk | None = None
    finished: frozenset[desired.ObjectRef] = frozenset()
    """Of ``Observed.finished``, the proofs the next pass still needs (``finished_pods``)."""
    finalizer_removable: bool = False


@dataclass(frozen=True, kw_only=True)
class Follower:
    """A per-node object to apply once its node shows ``labels`` ready (``followers``)."""

    obj: desired.DesiredObject
    labels: tuple[str, ...]


def followers(
    follow: Sequence[Follower], shown: Mapping[str, Mapping[str, str]]
) -> tuple[desired.DesiredObject, ...]:
    """The ``follow`` objects whose node now shows their labels ready (``shown``: each
    node's labels as its patch answered, or as cached when it needed none)."""
    return tuple(
        f.obj
        for f in follow
        if f.obj.node is not None
        and all(shown.get(f.obj.node, {}).get(k) == lifecycle.READY_VALUE for k in f.labels)
    )
