"""Keep-alive HTTP/1.1 connections to the API server, for sro's requests.

A converging fleet is thousands of small requests (a node's label patch, a pod's apply, a
driver's log), and most of what each one cost the operator was the HTTP client's own
machinery: URL objects, cookie and proxy handling, request and response objects, a timer
re-armed for every chunk. Here a request is one buffer written to an idle connection and
an answer parsed by ``httptools`` (llhttp, the parser of Node.js): about half the CPU per
request of aiohttp's client, measured against kube-apiserver. Watches, whose answer is a
stream read for minutes, and API servers reached through a proxy, stay on aiohttp
(``sro.kube.http``).

What an answer is waited for: ``read_timeout`` of silence, counted from the request's
write and from each piece of the answer (one timer per request, moved only when it fires).
A connection carries one request at a time; one whose answer was cut short, failed,
cancelled or asked to close is closed, never reused. A request on a reused connection that
the server closed before answering anything (an idle connection it dropped) is sent once
more on a new one when its method is idempotent, as aiohttp's client does.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import cast

import httptools

from sro import settings as settings_
from sro.kube import config

IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    retry_after: str | None = None


class Lost(ConnectionError):
    """The connection ended, or broke, before its answer was complete. ``unanswered``: not
    one byte of the answer had come (the server may never have read the request)."""

    def __init__(self, message: str, *, unanswered: bool) -> None:
        super().__init__(message)
        self.unanswered = unanswered


class Malformed(ConnectionError):
    """The server's bytes are not an HTTP/1.1 answer."""


class _Connection(asyncio.Protocol):
    """One connection and the answer it is reading (the parser's callbacks are methods)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._waiter: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._last = 0.0
        self._started = False
        self._status = 0
        self._body: list[bytes] = []
        self._size = 0
        self._limit = 0
        self._cut = False
        self._retry_after: str | None = None
        self._keep = True  # nothing sent on it yet

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio's classes

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:  # bytes no request asked for: the connection is not ours to trust
            self.close()
            return
        self._last = self._loop.time()
        self._started = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(Malformed(f"not an HTTP answer: {exc}"))
            self.close()

    def eof_received(self) -> bool:
        return False  # the transport closes; connection_lost says what it cut short

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        why = f": {exc}" if exc else ""
        self._fail(Lost(f"the server closed the connection{why}", unanswered=not self._started))

    # httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"retry-after":
            self._retry_after = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self._status = self._parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        if self._status >= 400 and self._size + len(body) > self._limit:
            self._cut = True  # an error's body is kept up to its limit; the rest is dropped
            body = body[: max(0, self._limit - self._size)]
        self._body.append(body)
        self._size += len(body)

    def on_message_complete(self) -> None:
        self._keep = self._parser.should_keep_alive() and not self._cut
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # the exchange

    def _fail(self, exc: BaseException) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def _check_silence(self, read_timeout: float) -> None:
        """The read timer: fails the wait after ``read_timeout`` without a byte, else
        moves itself to that long after the last one."""
        due = self._last + read_timeout
        if self._loop.time() >= due:
            self._fail(TimeoutError(f"no answer for {read_timeout:g} s"))
        else:
            self._timer = self._loop.call_at(due, self._check_silence, read_timeout)

    async def exchange(self, request: bytes, *, read_timeout: float, error_limit: int) -> Answer:
        """Write ``request`` and read its whole answer."""
        assert self.transport is not None
        self._waiter = waiter = self._loop.create_future()
        self._started = False
        self._status = 0
        self._body = []
        self._size = 0
        self._limit = error_limit
        self._cut = False
        self._retry_after = None
        self._keep = False
        self._last = self._loop.time()
        self._timer = self._loop.call_at(self._last + read_timeout, self._check_silence, read_timeout)
        try:
            self.transport.write(request)
            await waiter
        finally:
            self._timer.cancel()
            self._waiter = None
        return Answer(self._status, b"".join(self._body), self._retry_after)

    @property
    def reusable(self) -> bool:
        return self._keep and not self.closed

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


# What a request path keeps as it is (RFC 3986's pchar, and an escape already made).
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"


def target(path: str, params: Mapping[str, str] | None) -> str:
    """A request line's target: ``path`` percent-encoded where it must be, and the query."""
    encoded = urllib.parse.quote(path, safe=_PATH_SAFE)
    if params:
        encoded += "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
    return encoded


def request_bytes(
    method: str, target: str, *, host: str, headers: Mapping[str, str], data: bytes | None
) -> bytes:
    """One HTTP/1.1 request: ``target`` is the path and query, already encoded."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    lines.extend(f"{name}: {value}" for name, value in headers.items())
    if data is not None or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(data or b'')}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + data if data else head


class Pool:
    """Up to ``size`` connections to one server, idle ones reused newest first."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        tls: ssl.SSLContext | None,
        server_hostname: str | None,
        size: int,
        connect_timeout: float,
    ) -> None:
        self._host = host
        self._port = port
        self._tls = tls
        self._server_hostname = (server_hostname or host) if tls is not None else None
        self._size = size
        self._connect_timeout = connect_timeout
        self._idle: list[_Connection] = []
        self._open = 0
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()
        self._closed = False

    @classmethod
    def direct(cls, endpoint: config.Endpoint, *, settings: settings_.ApiSettings) -> Pool | None:
        """The pool for ``endpoint``'s requests; None when it is reached through a proxy."""
        if endpoint.proxy is not None:
            return None
        parts = urllib.parse.urlsplit(endpoint.host)
        secure = parts.scheme == "https"
        return cls(
            host=parts.hostname or "",
            port=parts.port or (443 if secure else 80),
            tls=endpoint.tls if secure else None,
            server_hostname=endpoint.server_hostname,
            size=settings.pool_size,
            connect_timeout=settings.connect_timeout,
        )

    @property
    def open(self) -> int:
        """Connections open now, idle or busy."""
        return self._open

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(self._connect_timeout):
            _, conn = await loop.create_connection(
                lambda: _Connection(loop),
                self._host,
                self._port,
                ssl=self._tls,
                server_hostname=self._server_hostname,
            )
        return conn

    async def _acquire(self) -> tuple[_Connection, bool]:
        """A connection, and whether it carried a request before."""
        while True:
            if self._closed:
                raise Lost("the connection pool is closed", unanswered=True)
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed:
                    return conn, True
                self._open -= 1
            if self._open < self._size:
                self._open += 1
                try:
                    return await self._connect(), False
                except BaseException:
                    self._open -= 1
                    self._wake()
                    raise
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # woken, then cancelled before it ran: the turn goes on
                raise
            finally:
                if waiter in self._waiting:
                    self._waiting.remove(waiter)

    def _wake(self) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _release(self, conn: _Connection, *, keep: bool) -> None:
        if keep and conn.reusable and not self._closed:
            self._idle.append(conn)
        else:
            conn.close()
            self._open -= 1
        self._wake()

    async def exchange(
        self,
        method: str,
        request: bytes,
        *,
        read_timeout: float,
        error_limit: int,
        before_send: Callable[[], None] | None = None,
    ) -> Answer:
        """Send ``request`` (``request_bytes``) and return its answer. ``before_send`` runs
        once a connection is in hand, right before anything is written, and may raise to
        stop. Raises ``Lost``, ``Malformed``, ``TimeoutError`` or ``OSError``."""
        while True:
            conn, reused = await self._acquire()
            if before_send is not None:
                try:
                    before_send()
                except BaseException:
                    self._release(conn, keep=True)  # nothing was written: it stays good
                    raise
            keep = False
            try:
                answer = await conn.exchange(request, read_timeout=read_timeout, error_limit=error_limit)
                keep = True
                return answer
            except Lost as exc:
                if not (reused and exc.unanswered and method in IDEMPOTENT):
                    raise
                # An idle connection the server had dropped: again, on the next idle one
                # or a new one (a new connection failing so is raised).
            finally:
                self._release(conn, keep=keep)

    async def close(self) -> None:
        self._closed = True
        for conn in self._idle:
            conn.close()
        self._open -= len(self._idle)
        self._idle.clear()
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
