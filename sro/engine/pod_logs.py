"""Fetching the container log tails the planner asks for (``wait-for-logs``).

Logs do not come with watch events, so the planner lists the pods whose tails it needs
and the engine fetches the last 4 KiB of each container and keeps them, keyed by pod uid,
for the next pass (a pod whose logs matched is not fetched again by the planner's choice).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import structlog

from sro import errors
from sro.engine import ports
from sro.model import progress

LOG_TAIL_BYTES = 4096

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
                tails[container] = await writer.pod_log(
                    namespace=request.namespace,
                    name=request.name,
                    container=container,
                    limit_bytes=LOG_TAIL_BYTES,
                )
            except errors.SroError as exc:
                log.debug("log not fetched", pod=request.name, container=container, error=str(exc))
        if tails and store.get(request.uid) != tails:
            store[request.uid] = tails
            changed = True
    return changed
