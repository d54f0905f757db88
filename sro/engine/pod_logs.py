"""Fetching the container log tails the planner asks for (``wait-for-logs``).

Logs do not come with watch events, so the planner lists the pods whose tails it needs
and the engine fetches the last ``TAIL_LINES`` lines of each container (the *tail*: a real
driver prints tens of KiB before its ready line) and keeps, keyed by pod uid, what
``readiness.condense`` keeps of it: the newest line matching the pod's pattern, else the
last 4 KiB. A pod whose logs matched is not fetched again (the planner stops asking), so a
ready line followed by any amount of output still counts; memory stays bounded.

Fetches go out concurrently (at most ``limit`` at once: at 1,000 nodes a pass may ask for
a thousand tails, and one after another they would hold the pass for as many round
trips), and each tail is condensed off the event loop. The result says whether a fetched
tail now matches: then a state may have completed, and the planner looks again at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

import structlog

from sro import errors
from sro.engine import ports, waves
from sro.model import progress
from sro.plan import readiness

TAIL_LINES = 2000
"""Lines read from the end of a log per fetch (polled every 1 to 10 s while waiting,
``sro.plan.log_polls``)."""
FETCH_BYTES = 256 * 1024
"""Cap on one fetch's size, whatever the lines' lengths."""

log = structlog.get_logger(__name__)


async def fetch(
    writer: ports.Writer,
    requests: Iterable[progress.LogRequest],
    store: dict[str, Mapping[str, str]],
    *,
    limit: int = waves.DEFAULT_LIMIT,
) -> bool:
    """Fetch each requested pod's container tails into ``store``, ``limit`` at a time; True
    when some pod's tails now all hold a line matching its pattern, so its wait may be over
    (the planner asks only for pods not yet matched, so this never repeats for a pod).

    A read that fails (logs refused by RBAC or by a kubelet with its debugging handlers
    off, a kubelet out of reach) is kept beside the pod's tails (``readiness.after_read``),
    so the state's reason says why it still waits, and said in one warning a fetch for the
    pods whose failure is new: read again on the pod's interval, it would otherwise wait
    silently forever. A pod gone meanwhile is no failure."""
    matched = False
    new: list[tuple[str, str]] = []  # (pod, why) of reads failing anew

    async def one(request: progress.LogRequest) -> None:
        nonlocal matched
        tails: dict[str, str] = {}
        failure = ""
        found_all = bool(request.containers)
        for container in request.containers:
            try:
                text = await writer.pod_log(
                    namespace=request.namespace,
                    name=request.name,
                    container=container,
                    tail_lines=TAIL_LINES,
                    limit_bytes=FETCH_BYTES,
                )
            except errors.NotFound:
                found_all = False
                continue
            except errors.SroError as exc:
                failure = failure or f"{container}: {exc}"
                found_all = False
                continue
            kept, found = await asyncio.to_thread(readiness.condense_match, text, request.pattern)
            tails[container] = kept
            found_all = found_all and found
        matched = matched or found_all
        before = store.get(request.uid)
        after = readiness.after_read(before, tails, failure)
        if after is not None:
            store[request.uid] = after
            if failure and (before or {}).get(readiness.READ_FAILED) != after[readiness.READ_FAILED]:
                new.append((request.name, after[readiness.READ_FAILED]))

    await waves.bounded(requests, one, limit=limit)
    if new:
        log.warning(
            "pod logs could not be read: wait-for-logs waits until they can",
            pods=len(new),
            pod=new[0][0],
            error=new[0][1],
        )
    return matched
