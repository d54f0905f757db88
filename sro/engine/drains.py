"""Draining nodes for driver upgrades: every pod that may leave is evicted, the rest named.

``sro.plan.upgrade`` decides which nodes drain and judges the result; this module only
carries out one ``DrainRequest``: list the node's pods (a fresh list from the API server:
the caches keep only sro's own pods), evict through the Eviction API (so the API server
holds every PodDisruptionBudget: a refusal is a 429 sent once, and the next pass asks
again) and report what is still there. Never evicted: DaemonSet pods (their controller
would put them back at once), mirror pods (the kubelet's), sro's own operand pods (the
upgrade replaces the driver pod itself), finished pods, and pods not carrying all of
``drain.podSelector``. A pod with an emptyDir volume stays unless ``deleteEmptyDirData``
says so. With ``force`` (only once the drain's timeout has passed) what eviction cannot
move is deleted instead. A node is drained when nothing is left, terminating pods
included: its workloads are gone before the driver goes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from sro import errors
from sro.engine import ports, waves
from sro.model import desired
from sro.model import specialresource as sr_model
from sro.plan import upgrade_records

log = structlog.get_logger(__name__)

MIRROR = "kubernetes.io/config.mirror"


def _left_alone(pod: Mapping[str, Any], request: upgrade_records.DrainRequest) -> bool:
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return True
    if MIRROR in (meta.get("annotations") or {}) or sr_model.OWNER_LABEL in labels:
        return True
    if any(o.get("kind") == "DaemonSet" and o.get("controller") for o in meta.get("ownerReferences") or ()):
        return True
    return any(labels.get(k) != v for k, v in request.pod_selector.items())


def _why_not(pod: Mapping[str, Any], request: upgrade_records.DrainRequest) -> str:
    """Why ``pod`` cannot be evicted now, or "" if it can."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "terminating"
    volumes = (pod.get("spec") or {}).get("volumes") or ()
    if not request.delete_empty_dir_data and any("emptyDir" in v for v in volumes):
        return "uses an emptyDir volume (drain.deleteEmptyDirData is false)"
    return ""


async def _one(writer: ports.Writer, request: upgrade_records.DrainRequest) -> tuple[str, ...]:
    left: list[str] = []
    for pod in await writer.node_pods(request.node):
        if _left_alone(pod, request):
            continue
        meta = pod.get("metadata") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        where = f"{namespace}/{name}"
        why = _why_not(pod, request)
        if why == "terminating":
            left.append(f"{where}: {why}")
            continue
        try:
            if request.force:
                ref = desired.ObjectRef(api_version="v1", kind="Pod", namespace=namespace, name=name)
                await writer.delete(ref, uid=str(meta.get("uid", "")))
            elif why:
                left.append(f"{where}: {why}")
                continue
            else:
                await writer.evict(namespace, name)
        except errors.TooManyRequests as exc:
            left.append(f"{where}: eviction refused ({exc})"[:300])
            continue
        except errors.NotFound:
            continue
        left.append(f"{where}: evicted, terminating")
    return tuple(left)


async def drain(
    writer: ports.Writer,
    requests: Iterable[upgrade_records.DrainRequest],
    *,
    limit: int = waves.DEFAULT_LIMIT,
) -> dict[str, tuple[str, ...]]:
    """Carry out ``requests``: node -> what is left on it (empty: drained). A node whose
    pods could not be listed or evicted for another reason is left out (asked again)."""
    results: dict[str, tuple[str, ...]] = {}

    async def one(request: upgrade_records.DrainRequest) -> None:
        try:
            results[request.node] = await _one(writer, request)
        except errors.SroError as exc:
            log.warning("drain failed", node=request.node, error=str(exc))

    await waves.bounded(list(requests), one, limit=limit)
    return results
