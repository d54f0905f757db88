"""Fetching the container log tails the planner asks for (``wait-for-logs``).

Logs do not come with watch events, so the planner lists the pods whose tails it needs
and the engine fetches the last ``TAIL_LINES`` lines of each container (the *tail*: a real
driver prints tens of KiB before its ready line) and keeps, keyed by pod uid, what
``readiness.condense`` keeps of it: the newest line matching the pod's pattern, else the
last 4 KiB. A pod whose logs matched is not fetched again (the planner stops asking), so a
ready line followed by any amount of output still counts; memory stays bounded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import structlog

from sro import errors
from sro.engine import ports
from sro.model import progress
from sro.plan import readiness

TAIL_LINES = 2000
"""Lines read from the end of a log per fetch (a poll every 10 s while waiting)."""
FETCH_BYTES = 256 * 1024
"""Cap on one fetch's size, whatever the lines' lengths."""

log = structlog.get_logger(__name__)


async def fetch(
    writer: ports.Writer,
    requests: Iterable[progress.LogRequest],
    store: dict[str, Mapping[str, str]],
) -> bool:
    """Fetch each requested pod's container tails into ``store``; True if any changed."""
    changed = False
    for request in requests:
        tails: dict[str, str] = {}
        for container in request.containers:
            try:
                text = await writer.pod_log(
                    namespace=request.namespace,
                    name=request.name,
                    container=container,
                    tail_lines=TAIL_LINES,
                    limit_bytes=FETCH_BYTES,
                )
                tails[container] = readiness.condense(text, request.pattern)
            except errors.SroError as exc:
                log.debug("log not fetched", pod=request.name, container=container, error=str(exc))
        if tails and store.get(request.uid) != tails:
            store[request.uid] = tails
            changed = True
    return changed
