"""Readiness rules per kind (contract section 5): is this object done, still going, or failed?

One function per rule, each from plain values to a ``Verdict``; ``walk`` calls them per
node. DaemonSet readiness reads the DaemonSet's pods, never ``DaemonSet.status``: that
status lags by minutes on large clusters, and only the pod tells which node is done.

Where it is silent, the contract is read this way (and tested so):

* a DaemonSet pod counts when it is Ready, not being deleted, and labelled with the
  DaemonSet's current template generation (its ``deprecated.daemonset.template.generation``
  annotation, else ``metadata.generation``), so an ``OnDelete`` rollout is not done until
  the old pod is replaced;
* a pod waiting with ``ImagePullBackOff``, ``CrashLoopBackOff`` and the like is still
  progressing, and the reason names it (``STUCK_REASONS``);
* StatefulSet, like Deployment, only counts at its current generation
  (``observedGeneration >= generation``): replicas of the previous template are not it;
* ``wait-for-logs`` gates DaemonSets and Pods (whose pods sro can name); the tail of every
  container of each such pod must match, except, in a running pod, containers that
  already completed: those are its init containers, whose logs say nothing of readiness;
* a match outlives the operator process: a pod whose uid the node's record of matches
  lists (``matched_before``: the annotation ``sro.dev/logs.<sr>``, written with the label
  of the state it completed) counts as matched without reading its tails again, however
  far its log has run on since;
* a pod whose tails this process has not read yet counts as matched where ``recorded``
  says the node's ready label may stand for it (``walk`` decides: a node with no record of
  matches at all, walked by a version of sro without it, whose driver is not being
  replaced), while its tails are asked for; judging it by a read that has not happened would reset every later
  state on every node, their device plugins included, at each restart of the operator.
  Once read, the tails decide as always.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sro.model import desired, logpattern, progress, views
from sro.plan import live_records

# Waiting reasons that will not clear by themselves soon; named in the node's reason.
STUCK_REASONS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)


class Outcome(enum.Enum):
    READY = "ready"
    WAITING = "waiting"
    FAILED = "failed"


@dataclass(frozen=True, kw_only=True)
class Verdict:
    outcome: Outcome
    reason: str = ""
    stuck: bool = False  # waiting on something that needs a human (a bad image, a crash loop)
    logs_needed: tuple[progress.LogRequest, ...] = ()
    matched: tuple[str, ...] = ()  # uids of pods whose log match is known: read, or recorded

    @property
    def ready(self) -> bool:
        return self.outcome is Outcome.READY


READY = Verdict(outcome=Outcome.READY)


def waiting(
    reason: str, *, stuck: bool = False, logs_needed: tuple[progress.LogRequest, ...] = ()
) -> Verdict:
    return Verdict(outcome=Outcome.WAITING, reason=reason, stuck=stuck, logs_needed=logs_needed)


def failed(reason: str) -> Verdict:
    return Verdict(outcome=Outcome.FAILED, reason=reason)


def _stuck_reason(pod: views.PodView) -> str:
    for container in pod.containers:
        if container.waiting_reason in STUCK_REASONS:
            return container.waiting_reason
    return ""


def failure_reason(pod: views.PodView) -> str:
    """Why a pod failed, e.g. ``Error (exit code 1)``; the first failing container decides."""
    for container in pod.containers:
        if container.exit_code not in (None, 0):
            return f"{container.terminated_reason or 'Error'} (exit code {container.exit_code})"
    for container in pod.containers:
        if container.terminated_reason:
            return container.terminated_reason
    return "Failed"


def log_containers(pod: views.PodView) -> tuple[str, ...]:
    """The containers whose logs must match: in a running pod, not those that already
    completed (its init containers); in a finished pod, all of them."""
    if pod.phase != "Running":
        return tuple(c.name for c in pod.containers)
    return tuple(c.name for c in pod.containers if not (c.terminated_reason and c.exit_code == 0))


LOG_KEEP_BYTES = 4096
"""What is kept of a log tail that has not matched yet (the newest part)."""
READ_FAILED = ""
"""The key, among a pod's tails by container name (``Observed.logs``), of why its last
read failed (no container is named so). Such a pod counts as not read: its reason says
why it still waits, and a node whose label stands for it keeps it."""
READ_FAILED_MAX = 300
"""Longest reason kept for a failed read (the API server's message names the pod)."""


def after_read(
    before: Mapping[str, str] | None, tails: Mapping[str, str], failure: str
) -> Mapping[str, str] | None:
    """What to keep of a pod's tails after a read: the containers read now (``tails``);
    where one failed (``failure``), the tails kept before beside why. None: keep nothing
    (no container read and none failed)."""
    if not failure:
        return dict(tails) if tails else None
    return {**(tails_read(before) or {}), **tails, READ_FAILED: failure[:READ_FAILED_MAX]}


def tails_read(tails: Mapping[str, str] | None) -> Mapping[str, str] | None:
    """A pod's tails as read, by container (None when no container's were)."""
    if tails is None or READ_FAILED not in tails:
        return tails
    return {k: v for k, v in tails.items() if k != READ_FAILED} or None


def _read(tails: Mapping[str, str] | None) -> tuple[Mapping[str, str] | None, str]:
    """``tails_read``, and why the last read failed ("" when it did not)."""
    return tails_read(tails), (tails or {}).get(READ_FAILED, "")


LOG_LINE_MAX = logpattern.LINE_MAX
"""Longest line a pattern is tried on (a longer line is cut): RE2 matches in time linear
in the line, so with lines bounded no pattern can take long, and a driver's ready line
is far shorter."""


def condense(text: str, pattern: str) -> str:
    """What to keep of a fetched log tail: the newest line matching ``pattern`` if any
    (so a ready line followed by more output still counts on later passes), else the
    last ``LOG_KEEP_BYTES``. Memory stays bounded however long the log."""
    return condense_match(text, pattern)[0]


def condense_match(text: str, pattern: str) -> tuple[str, bool]:
    """``condense``, and whether what it kept is a matching line."""
    try:
        compiled = logpattern.compile_pattern(pattern)
    except logpattern.PatternInvalid:
        return text[-LOG_KEEP_BYTES:], False
    found = compiled.matching_line(text)
    return (found, True) if found is not None else (text[-LOG_KEEP_BYTES:], False)


def logs_verdict(
    pattern: logpattern.LogPattern,
    pods: Sequence[views.PodView],
    logs: Mapping[str, Mapping[str, str]],
    *,
    recorded: bool = False,
    matched_before: frozenset[str] = frozenset(),
) -> Verdict:
    """Ready when each pod's tails of ``log_containers`` all match; otherwise ask again.

    ``matched_before``: uids of pods the node records as matched; ``recorded``: the node
    carries the state's ready label, so a pod whose tails were never read counts as
    matched until they are (see the module docstring). ``Verdict.matched`` names the pods
    whose match is known, for the record."""
    needed: list[progress.LogRequest] = []
    unread: list[progress.LogRequest] = []
    known: list[str] = []
    failed: tuple[str, str] | None = None  # (pod, why) of the first pod whose read failed
    for pod in pods:
        if pod.uid in matched_before:
            known.append(pod.uid)
            continue
        names = log_containers(pod)
        tails, failure = _read(logs.get(pod.uid))
        if names and tails is not None and all(n in tails and pattern.matches(tails[n]) for n in names):
            known.append(pod.uid)
            continue
        request = progress.LogRequest(
            namespace=pod.namespace, name=pod.name, uid=pod.uid, containers=names, pattern=pattern.pattern
        )
        if recorded and names and tails is None:
            unread.append(request)
            continue
        needed.append(request)
        if failure and failed is None:
            failed = (pod.name, failure)
    if not needed:
        return Verdict(outcome=Outcome.READY, logs_needed=tuple(unread), matched=tuple(known))
    if failed is not None:
        # Not stuck: a read that failed once may succeed the next time, and a stuck state
        # fails a driver upgrade on the node.
        return waiting(
            f"waiting for logs of pod {failed[0]} to match {pattern.pattern!r}; "
            f"its logs could not be read: {failed[1]}",
            logs_needed=(*needed, *unread),
        )
    return waiting(
        f"waiting for logs of pod {needed[0].name} to match {pattern.pattern!r}",
        logs_needed=(*needed, *unread),
    )


def daemonset_on_node(
    obj: desired.DesiredObject,
    live: live_records.LiveObject | None,
    pods: Sequence[views.PodView],
    *,
    logs: Mapping[str, Mapping[str, str]],
    previous_counts: bool = False,
    current_hash: str = "",
    recorded: bool = False,
    matched_before: frozenset[str] = frozenset(),
) -> Verdict:
    """The DaemonSet's pod on this node is Ready (or had Ready withdrawn by the node
    controller: ``PodView.ready_withdrawn``), not deleting, of the current template:
    its template generation, or (``current_hash``, the DaemonSet's current
    ControllerRevision, where known) its ``controller-revision-hash`` — a template set
    back to one a pod already runs leaves that pod current.

    With ``wait-for-logs``, the pod's log tails must match as well. With
    ``previous_counts`` (an ``OnDelete`` DaemonSet on a node whose turn to upgrade has
    not come: ``sro.plan.upgrade``), a pod of an older template counts as well: the node
    keeps running its previous driver until sro replaces it. ``recorded`` and
    ``matched_before``: the node's records (``logs_verdict``).
    """
    if live is None:
        return waiting(f"DaemonSet/{obj.ref.name} not created yet")
    generation = str(live.template_generation)
    current = [
        p
        for p in pods
        if not p.deleting
        and (
            p.template_generation == generation
            or (current_hash and p.labels.get(live_records.REVISION_HASH) == current_hash)
        )
    ]
    if not current and previous_counts and live.update_strategy == "OnDelete":
        current = [p for p in pods if not p.deleting]
    if not current:
        if any(not p.deleting for p in pods):
            return waiting(f"pod of DaemonSet/{obj.ref.name} is of an old template generation")
        return waiting(f"waiting for a pod of DaemonSet/{obj.ref.name}")
    # A surge may briefly run two. A pod whose Ready the node controller withdrew while
    # its kubelet was silent still runs as far as anyone knows: judged by its containers,
    # so a heartbeat gap does not reset every later state (and re-run its pods) on the node.
    pod = next((p for p in current if p.ready or p.ready_withdrawn), current[0])
    if not (pod.ready or pod.ready_withdrawn):
        stuck = _stuck_reason(pod)
        if stuck:
            return waiting(f"{stuck} (pod {pod.name})", stuck=True)
        return waiting(f"pod {pod.name} not ready")
    if obj.wait_for_logs is None:
        return READY
    return logs_verdict(obj.wait_for_logs, [pod], logs, recorded=recorded, matched_before=matched_before)


def pod_verdict(
    obj: desired.DesiredObject,
    pod: views.PodView | None,
    *,
    logs: Mapping[str, Mapping[str, str]],
    recorded: bool = False,
    matched_before: frozenset[str] = frozenset(),
) -> Verdict:
    """A Pod is done when it Succeeded; Failed fails the state (the engine retries it).
    ``recorded`` and ``matched_before``: as for ``logs_verdict``."""
    if pod is None:
        return waiting(f"pod {obj.ref.name} not created yet")
    if pod.deleting:
        return waiting(f"pod {pod.name} is being deleted")
    if pod.phase == "Succeeded":
        if obj.wait_for_logs is None:
            return READY
        return logs_verdict(obj.wait_for_logs, [pod], logs, recorded=recorded, matched_before=matched_before)
    if pod.phase == "Failed":
        return failed(failure_reason(pod))
    stuck = _stuck_reason(pod)
    if stuck:
        return waiting(f"{stuck} (pod {pod.name})", stuck=True)
    return waiting(f"pod {pod.name} is {pod.phase}")


def _condition_true(live: live_records.LiveObject, kind: str) -> bool:
    condition = live.conditions.get(kind)
    return condition is not None and condition.status == "True"


STATUS_READ = frozenset({"Pod", "Job", "Deployment", "StatefulSet", "CustomResourceDefinition", "Namespace"})
"""The kinds whose status a verdict reads (``pod_verdict``, ``cluster_object``; a build
reads its Job's conditions). A DaemonSet is judged by its pods on each node, never by its
status; every other kind is ready once it exists."""


def reads_status(kind: str) -> bool:
    """Whether a change of a ``kind`` object's status alone can change a verdict: for the
    others, the watch enqueues no pass for it (``sro.runtime.handlers.owned``)."""
    return kind in STATUS_READ


def withdrawn_only(live: live_records.LiveObject, pods: Sequence[views.PodView]) -> bool:
    """Whether a Deployment's or StatefulSet's status counts fewer ready replicas than it
    has only because the node controller withdrew ``Ready`` from some of its ``pods``: its
    running pods, counting a withdrawn ``Ready`` as ``Ready`` (``views.PodView.judged``),
    are enough. A heartbeat gap on the node of a dashboard's one pod is no news of the
    dashboard, and judging it lost would take the state's label off every node (and the
    ``complete`` label that other SpecialResources' pods are placed by). A pod the cache
    still shows Ready counts too: the status may arrive before the pod that made it.

    Where the status counts every replica ready, only the status decides (available
    replicas wait ``minReadySeconds`` after ready, and the pods cannot tell that); with
    ``minReadySeconds`` set, it decides alone."""
    if live.ready_replicas >= live.replicas or live.min_ready_seconds > 0:
        return False
    running = sum(
        1 for p in pods if p.phase == "Running" and not p.deleting and (p.ready or p.ready_withdrawn)
    )
    return running >= live.replicas


def cluster_object(
    obj: desired.DesiredObject,
    live: live_records.LiveObject | None,
    pods: Sequence[views.PodView] = (),
) -> Verdict:
    """Readiness of an object that is not placed per node (Pods are ``pod_verdict``'s);
    ``pods``: a Deployment's or StatefulSet's own (``withdrawn_only``)."""
    ref = obj.ref
    if live is None:
        return waiting(f"{ref} not created yet")
    kind = ref.kind
    if kind == "Job":
        if _condition_true(live, "Failed"):
            condition = live.conditions["Failed"]
            return failed(f"Job {ref.name} failed: {condition.reason or condition.message or 'Failed'}")
        return READY if _condition_true(live, "Complete") else waiting(f"Job {ref.name} not complete")
    if kind == "Deployment":
        if live.observed_generation < live.generation:
            return waiting(f"Deployment {ref.name} not rolled out to generation {live.generation}")
        if live.available_replicas != live.replicas and not withdrawn_only(live, pods):
            return waiting(f"Deployment {ref.name} {live.available_replicas}/{live.replicas} available")
        return READY
    if kind == "StatefulSet":
        if live.observed_generation < live.generation:
            return waiting(f"StatefulSet {ref.name} not rolled out to generation {live.generation}")
        if live.ready_replicas != live.replicas and not withdrawn_only(live, pods):
            return waiting(f"StatefulSet {ref.name} {live.ready_replicas}/{live.replicas} ready")
        return READY
    if kind == "CustomResourceDefinition":
        return READY if _condition_true(live, "Established") else waiting(f"CRD {ref.name} not established")
    if kind == "Namespace":
        return (
            READY
            if live.phase == "Active"
            else waiting(f"Namespace {ref.name} is {live.phase or 'not active'}")
        )
    return READY
