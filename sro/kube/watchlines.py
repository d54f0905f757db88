"""A watch stream's lines, split by sro rather than by aiohttp.

aiohttp's own line reader raises an exception that is not a ``ClientError`` when one
object's line passes its limit, which ended the process on a single large object. Here
a line is cut only past ``MAX_LINE_BYTES``, and then skipped whole and counted, so one
object can never stop a stream (nor restart it to meet the same object forever).

A reader given ``rest`` (``sro.watch.calm.Calm.rest``) may rest between reads: the
connection stops reading for that long, so what the server sends meanwhile waits in the
socket and comes in with the next read, in one wake-up of the process.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import aiohttp
import structlog

from sro import errors

log = structlog.get_logger(__name__)


MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest watch line kept: far above any object the API server stores (etcd refuses
requests over 1.5 MiB by default). A longer one is skipped whole and counted, never an
error that would restart (and meet it again) forever."""


async def lines(
    resp: aiohttp.ClientResponse,
    path: str,
    *,
    skipped: Callable[[], None],
    rest: Callable[[int], float] | None = None,
) -> AsyncIterator[bytes]:
    """The stream's lines, split here rather than by aiohttp, whose line limit raises an
    exception that is not a ``ClientError`` on one long object; ``skipped`` counts a line
    past ``MAX_LINE_BYTES``. ``rest``: given the size of a read (everything the connection
    had for the reader when it woke), once its lines are handed out, how long to rest
    before the next read (0: none)."""
    pending = bytearray()
    skipping = False
    try:
        async for chunk in resp.content.iter_any():
            start = 0
            view = memoryview(chunk)
            while (end := chunk.find(b"\n", start)) != -1:
                if skipping:
                    skipping = False
                elif pending:  # a line begun in an earlier read
                    pending += view[start:end]
                    yield bytes(pending)
                    pending.clear()
                else:  # a whole line in this read: one copy, not three
                    yield chunk[start:end]
                start = end + 1
            if not skipping:
                pending += view[start:]
                if len(pending) > MAX_LINE_BYTES:
                    log.error("watch line too long: skipped", path=path, limit=MAX_LINE_BYTES)
                    skipped()
                    pending.clear()
                    skipping = True
            if rest is not None and (seconds := rest(len(chunk))) > 0:
                await _rest(resp, seconds)
        if pending and not skipping:
            yield bytes(pending)
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise errors.TransportError(f"watch {path}: {type(exc).__name__}: {exc}") from exc
    except asyncio.IncompleteReadError as exc:
        raise errors.TransportError(f"watch {path}: stream cut") from exc


async def _rest(resp: aiohttp.ClientResponse, seconds: float) -> None:
    """Stop reading the connection for ``seconds`` (the kernel keeps what arrives, and TCP
    slows the server once its buffer is full). A connection already released or lost has
    nothing more to read: the next read ends the stream at once."""
    connection = resp.connection
    protocol = connection.protocol if connection is not None else None
    if protocol is None or not protocol.connected:
        return
    protocol.pause_reading()
    try:
        await asyncio.sleep(seconds)
    finally:
        protocol.resume_reading()
