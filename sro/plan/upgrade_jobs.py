"""``spec.upgradePolicy.waitForCompletion``: a cordoned node waits for its jobs before its drain.

A drain evicts what runs on a node; for a batch job (a training run, a long
computation) that means starting over elsewhere. So between ``cordoned`` and
``draining`` a node walks through ``waiting-for-jobs`` (``sro.plan.upgrade``): cordoned,
nothing new lands on it, and it waits while a pod on it that carries every label of
``waitForCompletion.podSelector`` has not finished. Which pods count:

* bound to the node, carrying all the selector's labels, not finished (phase neither
  ``Succeeded`` nor ``Failed``) and not being deleted (a terminating pod is leaving
  anyway; the drain waits for it to be gone);
* never DaemonSet, mirror or sro's own operand pods, the drain's exemptions too: they
  never finish by themselves, and a selector that happens to match one would hold the
  node for good;
* an empty ``podSelector`` selects nothing (no wait): "every pod on the node" includes
  long-running services, which never finish, and emptying the node of those is the
  drain's job.

The answer must be fresh, and the caches keep only sro's own pods, so the planner asks
the engine (``JobCheck``) and the engine lists the node's pods from the API server
(``fieldSelector spec.nodeName`` and the ``labelSelector``: ``sro.engine.upgrade_jobs``);
it hands back the pods still running (``Observed.jobs``) and the next pass decides. Past
``timeoutSeconds`` (from the moment the node began to wait; 0: no bound) the node goes on
to ``draining`` anyway, its record naming the jobs it left running, and the drain evicts
them as it evicts everything else (as the NVIDIA GPU operator's wait-for-jobs does): the
timeout bounds how long a rollout may be held by one node, and a job that must never be
interrupted is protected by a PodDisruptionBudget, which the drain honours. With
``drain.enable: false`` the node goes on to ``replacing`` instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sro.model import crd_limits, upgrade_policy
from sro.model import specialresource as sr_model

JOBS_POLL = timedelta(seconds=5)
"""How soon to look at a waiting node's jobs again (they are not watched: the caches keep
only sro's own pods)."""
MIRROR = "kubernetes.io/config.mirror"
FINISHED = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True, kw_only=True)
class JobCheck:
    """Ask the API server which pods on ``node`` carrying all of ``pod_selector`` have not
    finished (``Observed.jobs`` of the next pass)."""

    node: str
    pod_selector: Mapping[str, str]

    @property
    def label_selector(self) -> str:
        """``pod_selector`` as a ``labelSelector`` query (equality terms, sorted)."""
        return ",".join(f"{k}={v}" for k, v in sorted(self.pod_selector.items()))


@dataclass(frozen=True, kw_only=True)
class Step:
    """What one pass does for a node that waits: ask again (``check``) and look again in
    ``wake_in``, or (``check`` None) go on, ``reason`` naming the jobs left running past
    the timeout."""

    check: JobCheck | None = None
    wake_in: timedelta = JOBS_POLL
    reason: str = ""


def check(node: str, policy: upgrade_policy.UpgradePolicy) -> JobCheck | None:
    """The question to ask about ``node`` (None: it waits for nothing)."""
    wait = policy.wait_for_completion
    if wait is None or not wait.pod_selector:
        return None
    return JobCheck(node=node, pod_selector=wait.pod_selector)


def step(
    node: str,
    *,
    policy: upgrade_policy.UpgradePolicy,
    running: tuple[str, ...] | None,
    elapsed: timedelta,
) -> Step:
    """One pass of a node in ``waiting-for-jobs``: ``running`` is what the engine's last
    look found (``"<ns>/<pod>"``; None: no answer yet), ``elapsed`` the time since it began
    to wait."""
    wait = policy.wait_for_completion
    question = check(node, policy)
    if wait is None or question is None or (running is not None and not running):
        return Step()
    timeout = timedelta(seconds=wait.timeout_seconds)
    if wait.timeout_seconds and elapsed >= timeout:
        left = ", ".join(running[:5]) if running else "unknown"
        why = f"jobs still running after waitForCompletion.timeoutSeconds {wait.timeout_seconds}s: {left}"
        return Step(reason=why[: crd_limits.FAILING_REASON_MAX])
    wake = min(JOBS_POLL, timeout - elapsed) if wait.timeout_seconds else JOBS_POLL
    return Step(check=question, wake_in=wake)


def unfinished(pod: Mapping[str, Any]) -> bool:
    """Whether a pod (as the API server lists it) is a job the node still waits for; the
    selector's labels were matched by the list already (see the module docstring)."""
    meta = pod.get("metadata") or {}
    if (pod.get("status") or {}).get("phase") in FINISHED or meta.get("deletionTimestamp"):
        return False
    if MIRROR in (meta.get("annotations") or {}) or sr_model.OWNER_LABEL in (meta.get("labels") or {}):
        return False
    return not any(
        o.get("kind") == "DaemonSet" and o.get("controller") for o in meta.get("ownerReferences") or ()
    )
