"""Reading the container log tails the planner asks for (``wait-for-logs``), beside the passes.

Logs do not come with watch events, so the planner lists the pods whose tails it needs
and the engine fetches the last ``TAIL_LINES`` lines of each container (the *tail*: a real
driver prints tens of KiB before its ready line) and keeps, keyed by pod uid, what
``readiness.condense`` keeps of it: the newest line matching the pod's pattern, else the
last 4 KiB. A pod whose logs matched is not fetched again (the planner stops asking), so a
ready line followed by any amount of output still counts; memory stays bounded.

A read goes through the API server to the pod's kubelet, and a kubelet can hang (a node
going away, a kubelet stuck): the API server then waits out its TLS handshake timeout on
each of the client's retries, a minute in all. So no pass waits for a read (``Reads``): a
pass starts the reads it asks for and goes on, a pod is read by one request at a time
however many passes ask, and each read that matches or newly fails wakes the
SpecialResource, whose next pass sees it. One node out of reach costs its own state, not
every other node's next pass.

Fetches go out concurrently (at most ``limit`` at once per pass's batch: at 1,000 nodes a
pass may ask for a thousand tails), and each tail is condensed off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping

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


class Reads:
    """One SpecialResource's log reads in flight, carried on beside its passes (see the
    module docstring); ``wake`` asks for a pass of it."""

    def __init__(self, *, wake: Callable[[], None]) -> None:
        self._wake = wake
        self._reading: set[str] = set()  # uids of the pods read now
        self._tasks: set[asyncio.Task[None]] = set()

    def start(
        self,
        writer: ports.Writer,
        requests: Iterable[progress.LogRequest],
        store: dict[str, Mapping[str, str]],
        *,
        limit: int = waves.DEFAULT_LIMIT,
    ) -> None:
        """Start reading the requested pods not read already."""
        fresh = tuple(r for r in requests if r.uid not in self._reading)
        if not fresh:
            return
        self._reading.update(r.uid for r in fresh)
        task = asyncio.create_task(self._run(writer, fresh, store, limit=limit))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        """Stop every read in flight (the SpecialResource is gone or no longer reconciled)."""
        for task in self._tasks:
            task.cancel()

    async def _run(
        self,
        writer: ports.Writer,
        requests: tuple[progress.LogRequest, ...],
        store: dict[str, Mapping[str, str]],
        *,
        limit: int,
    ) -> None:
        def read(request: progress.LogRequest, news: bool) -> None:
            self._reading.discard(request.uid)
            if news:
                self._wake()

        try:
            await fetch(writer, requests, store, limit=limit, read=read)
        except Exception:  # nothing is meant to escape a fetch; a bug must not go unsaid
            log.exception("reading pod logs failed", pods=len(requests), pod=requests[0].name)
        finally:
            self._reading.difference_update(r.uid for r in requests)


async def fetch(
    writer: ports.Writer,
    requests: Iterable[progress.LogRequest],
    store: dict[str, Mapping[str, str]],
    *,
    limit: int,
    read: Callable[[progress.LogRequest, bool], None],
) -> None:
    """Fetch each requested pod's container tails into ``store``, ``limit`` at a time, and
    call ``read(request, news)`` as each pod's are in: ``news`` when its tails now all hold
    a line matching its pattern, so its wait may be over (the planner asks only for pods
    not yet matched, so this never repeats for a pod), or when its read failed anew.

    A read that fails (logs refused by RBAC or by a kubelet with its debugging handlers
    off, a kubelet out of reach) is kept beside the pod's tails (``readiness.after_read``),
    so the state's reason says why it still waits, and said in one warning a fetch for the
    pods whose failure is new: read again on the pod's interval, it would otherwise wait
    silently forever. A pod gone meanwhile is no failure."""
    new: list[tuple[str, str]] = []  # (pod, why) of reads failing anew

    async def one(request: progress.LogRequest) -> None:
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
        before = store.get(request.uid)
        after = readiness.after_read(before, tails, failure)
        failed_anew = False
        if after is not None:
            store[request.uid] = after
            if failure and (before or {}).get(readiness.READ_FAILED) != after[readiness.READ_FAILED]:
                new.append((request.name, after[readiness.READ_FAILED]))
                failed_anew = True
        read(request, found_all or failed_anew)

    await waves.bounded(requests, one, limit=limit)
    if new:
        log.warning(
            "pod logs could not be read: wait-for-logs waits until they can",
            pods=len(new),
            pod=new[0][0],
            error=new[0][1],
        )
