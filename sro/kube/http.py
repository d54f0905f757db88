"""Raw JSON requests and watch streams to one API server, authenticated.

No generated models on the hot path: bodies are dicts. Requests go over sro's own
keep-alive connections (``sro.kube.pool``; through aiohttp's session to a server behind a
proxy), streams over aiohttp's. Every request has a connect and a read timeout, because a
half-open TCP connection otherwise hangs forever; a stream has one until its headers
arrive, and then its reader bounds the gap between lines (the reflector's inactivity
deadline, one timer moved a few times a minute: aiohttp's ``sock_read`` arms a new timer
for every chunk read, a tenth of the transport's cost of a node heartbeat). Transient
failures (no answer, 429, 5xx) are retried with jittered exponential backoff, never sooner
than the server's Retry-After (bounded by ``ApiSettings.retry_after_cap``); semantic 4xx
answers (404, 409, 422...) are raised at once as typed errors, since only the caller knows
what to do about them. A 429 is retried even for a request otherwise sent once (a POST):
the server refused it before doing anything. Watches are not retried here; the reflector
honours a watch's Retry-After through ``retry_delay``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import structlog
import tenacity

import sro
from sro import errors
from sro import settings as settings_
from sro.kube import config as kconfig
from sro.kube import counting, limiter, pool, watchlines
from sro.kube import errors as kerrors
from sro.watch import decode

log = structlog.get_logger(__name__)

# Who sro says it is on every request: the audit log (and an administrator reading it)
# tells sro's writes from anyone else's by it, whatever credentials sro runs with.
USER_AGENT = f"sro/{sro.__version__}"

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
METADATA_LIST = f"{JSON};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,{JSON}"
"""A list answered with each item's metadata only (what ``kubectl get -o name`` asks for);
a server that cannot answers plain JSON."""
METADATA = f"{JSON};as=PartialObjectMetadata;g=meta.k8s.io;v=v1,{JSON}"
"""One object answered with its metadata only (any verb that returns the object: a PATCH
too); a server that cannot answers plain JSON."""
APPLY_PATCH = "application/apply-patch+yaml"

# Longest error body read into memory; the message keeps far less (sro.kube.errors).
_ERROR_BODY_LIMIT = 64 * 1024


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, errors.TransportError | errors.TooManyRequests | errors.ServerError)


def _refused_unseen(exc: BaseException) -> bool:
    """An answer that proves the request was not carried out: safe to send again."""
    return isinstance(exc, errors.TooManyRequests)


def _never(exc: BaseException) -> bool:
    return False


def _session(endpoint: kconfig.Endpoint, *, pool_size: int) -> aiohttp.ClientSession:
    """The session every watch goes through, and every request to a server behind a
    proxy (the others go over ``sro.kube.pool``'s connections).

    It does not trust the environment: aiohttp would then look ``~/.netrc`` up on an
    executor thread for every request sent without an ``auth`` argument (every request
    of ours: the token goes in a header), a thread hop each for nothing. The proxy, the
    kubeconfig's or the environment's, is resolved once (``kconfig.load``). Watch events
    of large objects can exceed aiohttp's default read buffer (etcd takes 1.5 MiB)."""
    connector = aiohttp.TCPConnector(limit=pool_size, ssl=endpoint.tls if endpoint.tls is not None else False)
    return aiohttp.ClientSession(connector=connector, trust_env=False, read_bufsize=2**21)


class Api:
    """One authenticated connection pool to the API server.

    Open with ``await Api.connect(settings)``; close with ``await api.close()`` (or use
    it as an async context manager) so aiohttp leaves no unclosed session behind.
    """

    def __init__(
        self,
        *,
        endpoint: kconfig.Endpoint,
        settings: settings_.ApiSettings,
        metrics: counting.ApiMetrics | None = None,
    ) -> None:
        self.settings = settings
        self.metrics: counting.ApiMetrics = metrics or counting.NoMetrics()
        self._credentials = endpoint.credentials
        self._session = _session(endpoint, pool_size=settings.pool_size)
        self._proxy = endpoint.proxy
        self._server_hostname = endpoint.server_hostname
        self.host = endpoint.host.rstrip("/")
        parts = urllib.parse.urlsplit(self.host)
        self._host_label = parts.netloc  # rest_client_requests_total's host
        self._prefix = parts.path  # a server reached under a path (a gateway's /k8s/clusters/x)
        # Requests go over sro's own keep-alive connections; streams, and every request to
        # a server behind a proxy, over aiohttp's session (``pool``'s docstring).
        self._pool = pool.Pool.direct(endpoint, settings=settings)
        self._limiter = limiter.RequestLimiter(
            qps=settings.qps, burst=settings.burst, max_in_flight=settings.max_in_flight
        )

    @classmethod
    async def connect(
        cls, settings: settings_.ApiSettings, *, metrics: counting.ApiMetrics | None = None
    ) -> Api:
        return cls(endpoint=await kconfig.load(settings), settings=settings, metrics=metrics)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
        await self._session.close()

    async def __aenter__(self) -> Api:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _headers(self, content_type: str | None, *, accept: str = JSON) -> dict[str, str]:
        headers = {"Accept": accept, "User-Agent": USER_AGENT}
        if content_type:
            headers["Content-Type"] = content_type
        token = await self._credentials.header()
        if token:
            headers["Authorization"] = token
        return headers

    def retry_delay(self, exc: BaseException | None, *, backoff: float) -> float:
        """``backoff``, or the server's Retry-After if longer (bounded): the one rule for
        every retry of a request or a watch."""
        return kerrors.retry_delay(exc, backoff=backoff, cap=self.settings.retry_after_cap)

    def throttled(self, exc: BaseException, *, resource: str, delay: float) -> None:
        """Count and say a wait the server asked for (429, or 503 with Retry-After)."""
        if isinstance(exc, errors.ApiError) and exc.retry_after is not None:
            self.metrics.api_throttled(resource=resource, code=str(exc.code), seconds=delay)

    def _wait(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        backoff = tenacity.wait_random_exponential(
            multiplier=self.settings.retry_initial, max=self.settings.retry_cap
        )
        return self.retry_delay(exc, backoff=float(backoff(state)))

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        resource: str = "",
        retry: bool = True,
        guard: Callable[[], None] | None = None,
        accept: str = JSON,
        retry_throttled: bool = True,
        decode_as: Callable[[bytes], Any] = decode.loads,
    ) -> dict[str, Any]:
        """Send one request and return the JSON answer; typed errors for error answers.

        Transient failures are retried unless ``retry`` is false (a POST whose answer was
        lost may have been carried out: retrying it would do it twice); a 429 is retried
        either way, after the server's Retry-After, unless ``retry_throttled`` is false too
        (an eviction a PodDisruptionBudget refuses is a 429 that is an answer, not a load
        signal). ``guard`` is called immediately before every attempt is sent and may raise to stop
        (a write fenced by the lease: a retry that comes after a long Retry-After must not
        go out once the lease is gone). ``accept`` asks for another JSON form of the answer
        (``METADATA``, ``METADATA_LIST``: metadata only); ``decode_as`` reads it (a list
        page of a kind whose items the caller reads in part: ``events.Parser.page``).
        """

        async def send() -> bytes:
            return await self._once(
                method,
                path,
                params=params,
                body=body,
                content_type=content_type,
                resource=resource,
                accept=accept,
                guard=guard,
            )

        answer = await self._retrying(
            send,
            what=f"{method} {path}",
            resource=resource,
            attempts=self.settings.retries,
            retry_on=_retryable if retry else _refused_unseen if retry_throttled else _never,
        )
        if not answer:
            return {}
        try:
            parsed = decode_as(answer)
        except ValueError as exc:  # a proxy's HTML page, a truncated body: no answer at all
            raise errors.TransportError(f"{method} {path}: the answer is not JSON: {exc}") from None
        return parsed if isinstance(parsed, dict) else {"items": parsed}

    async def text(self, path: str, *, params: Mapping[str, str] | None = None, resource: str = "") -> str:
        """GET ``path`` and return the answer as text (container logs), retrying like ``request``."""
        answer = await self._retrying(
            lambda: self._once("GET", path, params=params, body=None, content_type=None, resource=resource),
            what=f"GET {path}",
            resource=resource,
            attempts=self.settings.retries,
            retry_on=_retryable,
        )
        return answer.decode("utf-8", "replace")

    async def _retrying(
        self,
        send: Callable[[], Awaitable[bytes]],
        *,
        what: str,
        resource: str,
        attempts: int,
        retry_on: Callable[[BaseException], bool],
    ) -> bytes:
        """``send()``, retried on what ``retry_on`` accepts, with jittered backoff or the
        server's Retry-After, whichever is longer. The first attempt goes out on its own
        (tenacity's machinery, built per call, was a twentieth of the write path's CPU); after
        a failure tenacity runs as before, its attempt 1 handing back that failure unsent."""
        try:
            return await send()
        except Exception as exc:
            if attempts <= 1 or not retry_on(exc):
                raise
            first: list[BaseException] = [exc]

        async def again() -> bytes:
            if first:
                raise first.pop()  # tenacity's attempt 1: the failure already seen
            return await send()

        def before_sleep(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            delay = state.upcoming_sleep
            if exc is not None:
                self.throttled(exc, resource=resource, delay=delay)
            log.info(
                "retrying request",
                request=what,
                attempt=state.attempt_number,
                delay=round(delay, 2),
                error=str(exc) if exc else "",
            )

        retrying = tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(attempts),
            wait=self._wait,
            retry=tenacity.retry_if_exception(retry_on),
            reraise=True,
            before_sleep=before_sleep,
        )
        async for attempt in retrying:
            with attempt:
                return await again()
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    async def _once(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None,
        body: Any,
        content_type: str | None,
        resource: str,
        accept: str = JSON,
        guard: Callable[[], None] | None = None,
    ) -> bytes:
        """One attempt. ``guard`` runs after every wait of the attempt (the client's rate
        limit, the credentials) and right before the request is handed to the connection:
        a process stopped during a wait (SIGSTOP, a stalled host) finds out when it
        resumes, before anything is sent, not after."""
        data: bytes | None = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            content_type = content_type or JSON
        verb = method.lower()
        try:
            async with self._limiter.slot() as waited:
                if waited > 0:
                    self.metrics.api_limited(verb=method, host=self._host_label, seconds=waited)
                headers = await self._headers(content_type, accept=accept)
                started = time.monotonic()
                if self._pool is not None:
                    request = pool.request_bytes(
                        method, pool.target(self._prefix + path, params), host=self._host_label,
                        headers=headers, data=data,
                    )  # fmt: skip
                    answer = await self._pool.exchange(
                        method,
                        request,
                        read_timeout=self.settings.request_timeout,
                        error_limit=_ERROR_BODY_LIMIT,
                        before_send=guard,
                    )
                else:
                    if guard is not None:
                        guard()
                    answer = await self._via_session(method, path, params=params, data=data, headers=headers)
        except (aiohttp.ClientError, pool.Lost, pool.Malformed, OSError, TimeoutError) as exc:
            self._count(verb, method, path, resource=resource, code="error", started=None)
            raise errors.TransportError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
        self._count(verb, method, path, resource=resource, code=str(answer.status), started=started)
        if answer.status >= 400:
            raise kerrors.from_response(answer.status, answer.body, retry_after=answer.retry_after)
        return answer.body

    async def _via_session(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None,
        data: bytes | None,
        headers: Mapping[str, str],
    ) -> pool.Answer:
        """One exchange through aiohttp's session and the proxy (``pool``'s docstring)."""
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=self.settings.connect_timeout, sock_read=self.settings.request_timeout
        )
        async with self._session.request(
            method, self.host + path, params=params, data=data, headers=headers, timeout=timeout,
            server_hostname=self._server_hostname, proxy=self._proxy,
        ) as resp:  # fmt: skip
            if resp.status >= 400:
                raw = await resp.content.read(_ERROR_BODY_LIMIT)
                return pool.Answer(resp.status, raw, resp.headers.get("Retry-After"))
            return pool.Answer(resp.status, await resp.read())

    def _count(
        self, verb: str, method: str, path: str, *, resource: str, code: str, started: float | None
    ) -> None:
        """One request for the metrics: ``started`` is when it was sent (None: no answer came)."""
        self.metrics.api_request(
            verb=verb,
            resource=resource or counting.resource_of(path),
            code=code,
            method=method,
            host=self._host_label,
            seconds=None if started is None else time.monotonic() - started,
        )

    @asynccontextmanager
    async def stream(
        self,
        path: str,
        *,
        params: Mapping[str, str],
        open_timeout: float,
        resource: str = "",
        rest: Callable[[int], float] | None = None,
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """Open a streaming GET (a watch) and yield its lines; the stream closes on exit.

        ``open_timeout`` bounds the wait for the answer's headers; from there the caller
        must bound each wait for a line (no read timeout is left on the socket). ``rest``:
        the rests between reads (``watchlines.lines``)."""
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=self.settings.connect_timeout, sock_read=None
        )
        started = time.monotonic()
        try:
            async with asyncio.timeout(open_timeout):
                resp = await self._session.get(
                    self.host + path,
                    params=params,
                    headers=await self._headers(None),
                    timeout=timeout,
                    server_hostname=self._server_hostname,
                    proxy=self._proxy,
                )
        except (aiohttp.ClientError, TimeoutError) as exc:
            self._count("watch", "GET", path, resource=resource, code="error", started=None)
            raise errors.TransportError(f"watch {path}: {type(exc).__name__}: {exc}") from exc
        self._count("watch", "GET", path, resource=resource, code=str(resp.status), started=started)
        try:
            if resp.status >= 400:
                raw = await resp.content.read(_ERROR_BODY_LIMIT)
                raise kerrors.from_response(resp.status, raw, retry_after=resp.headers.get("Retry-After"))
            skipped = functools.partial(
                self.metrics.watch_line_skipped, resource=resource or counting.resource_of(path)
            )
            yield watchlines.lines(resp, path, skipped=skipped, rest=rest)
        finally:
            resp.release()
            resp.close()
