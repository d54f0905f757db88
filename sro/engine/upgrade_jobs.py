"""Waiting for jobs before a drain: which selected pods still run on a node, asked fresh.

``sro.plan.upgrade_jobs`` decides whether a cordoned node still waits for its jobs
(``spec.upgradePolicy.waitForCompletion``); it needs to know what runs on the node now,
and the caches keep only sro's own pods. So for each ``JobCheck`` this module lists the
node's pods from the API server (``fieldSelector spec.nodeName`` and the selector as the
``labelSelector``: one small request, never a possibly stale cache) and reports those the
planner's rule (``upgrade_jobs.unfinished``) says are still running, as
``Observed.jobs`` of the next pass. It decides nothing itself.
"""

from __future__ import annotations

from collections.abc import Iterable

import structlog

from sro import errors
from sro.engine import ports, waves
from sro.plan import upgrade_jobs

log = structlog.get_logger(__name__)


async def check(
    writer: ports.Writer,
    requests: Iterable[upgrade_jobs.JobCheck],
    *,
    limit: int = waves.DEFAULT_LIMIT,
) -> dict[str, tuple[str, ...]]:
    """Carry out ``requests``: node -> its selected pods still running (``"<ns>/<pod>"``,
    sorted; empty: none). A node whose pods could not be listed is left out (asked again)."""
    results: dict[str, tuple[str, ...]] = {}

    async def one(request: upgrade_jobs.JobCheck) -> None:
        try:
            pods = await writer.node_pods(request.node, label_selector=request.label_selector)
        except errors.SroError as exc:
            log.warning("listing a node's jobs failed", node=request.node, error=str(exc))
            return
        metas = [p.get("metadata") or {} for p in pods if upgrade_jobs.unfinished(p)]
        results[request.node] = tuple(sorted(f"{m.get('namespace', '')}/{m.get('name', '')}" for m in metas))

    await waves.bounded(list(requests), one, limit=limit)
    return results
