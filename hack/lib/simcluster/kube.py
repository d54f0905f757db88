"""A small asynchronous Kubernetes API client over aiohttp, for the simulator.

The simulator needs only create/get/patch/delete/list/watch on a few kinds, with
the admin client certificate of its own cluster; a dozen lines of HTTP are easier
to keep correct at 5,000 nodes than a generated client.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from simcluster import layout, pki

if TYPE_CHECKING:
    import aiohttp

log = logging.getLogger("simcluster.kube")


def _aiohttp() -> Any:
    """aiohttp, imported on first use: commands that never talk to the API start faster."""
    return importlib.import_module("aiohttp")


JSON = dict[str, Any]
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


class ApiError(Exception):
    """A non-2xx answer from the API server."""

    def __init__(self, status: int, body: str, *, method: str, path: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


class Kube:
    """One API server, reached as one client identity of the run directory's PKI."""

    def __init__(self, *, server: str, run: layout.RunDir, who: str = "admin", concurrency: int = 64) -> None:
        material = pki.Pki(run.pki)
        context = ssl.create_default_context(cafile=str(material.ca_cert))
        context.load_cert_chain(str(material.client_cert(who)), str(material.client_key(who)))
        self._server = server.rstrip("/")
        self._ssl = context
        self._session: aiohttp.ClientSession | None = None
        self._limit = asyncio.Semaphore(concurrency)

    async def __aenter__(self) -> Kube:
        aiohttp = _aiohttp()
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self._ssl, limit=128),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None, "use Kube as an async context manager"
        return self._session

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        params: Mapping[str, str] | None = None,
        request_seconds: float = 30,
    ) -> JSON:
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        raw = await self._exchange(
            method, path, data=data, headers=headers, params=params, request_seconds=request_seconds
        )
        return json.loads(raw) if raw else {}

    async def get(self, path: str, **kw: Any) -> JSON:
        return await self.request("GET", path, **kw)

    async def get_bytes(self, path: str, *, request_seconds: float = 30) -> bytes:
        """A GET whose answer is not JSON (a profile from ``/debug/pprof``), as it came."""
        return await self._exchange("GET", path, request_seconds=request_seconds)

    async def _exchange(
        self,
        method: str,
        path: str,
        *,
        data: str | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        request_seconds: float,
    ) -> bytes:
        """One request under the client's concurrency bound; the answer's body, or
        ``ApiError`` for a status of 300 or more."""
        aiohttp = _aiohttp()
        async with (
            self._limit,
            self.session.request(
                method,
                self._server + path,
                data=data,
                headers=headers,
                params=params,
                timeout=aiohttp.ClientTimeout(total=request_seconds),
            ) as resp,
        ):
            raw = await resp.read()
            if resp.status >= 300:
                raise ApiError(resp.status, raw.decode(errors="replace"), method=method, path=path)
            return raw

    async def create(self, path: str, body: JSON) -> JSON:
        return await self.request("POST", path, body=body)

    async def patch(self, path: str, body: JSON, *, strategic: bool = False) -> JSON:
        return await self.request("PATCH", path, body=body, content_type=STRATEGIC if strategic else MERGE)

    async def delete(self, path: str, *, missing_ok: bool = True) -> None:
        try:
            await self.request("DELETE", path)
        except ApiError as e:
            if not (missing_ok and e.status == 404):
                raise

    async def healthy(self, path: str = "/readyz") -> bool:
        aiohttp = _aiohttp()
        try:
            async with self.session.get(self._server + path, timeout=aiohttp.ClientTimeout(total=3)) as resp:
                return resp.status == 200
        except (aiohttp.ClientError, TimeoutError, OSError):
            return False

    async def watch(
        self, path: str, *, resource_version: str, timeout_seconds: int = 300
    ) -> AsyncIterator[JSON]:
        """Yields watch events (``{"type", "object"}``) from ``resource_version`` until the server ends it."""
        aiohttp = _aiohttp()
        params = {
            "watch": "1",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        async with self.session.get(
            self._server + path,
            params=params,
            timeout=aiohttp.ClientTimeout(total=timeout_seconds + 30, sock_read=timeout_seconds + 30),
        ) as resp:
            if resp.status >= 300:
                raise ApiError(resp.status, await resp.text(), method="WATCH", path=path)
            # Split on newlines ourselves: aiohttp's line reader caps line length.
            buffer = b""
            async for chunk in resp.content.iter_any():
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)


async def informer(
    client: Kube,
    path: str,
    handle: Callable[[str, dict[str, Any]], None],
    *,
    synced: asyncio.Event,
    reset: Callable[[], None] | None = None,
) -> None:
    """List, then watch from the list's resourceVersion; relist on 410; reconnect on errors."""
    rv = ""
    while True:
        try:
            if not rv:
                listed = await client.get(path, request_seconds=120)
                if reset is not None:
                    reset()
                for item in listed.get("items", []):
                    handle("ADDED", item)
                rv = listed["metadata"]["resourceVersion"]
                synced.set()
            async for event in client.watch(path, resource_version=rv):
                obj = event.get("object", {})
                if event["type"] == "ERROR":
                    if obj.get("code") == 410:
                        rv = ""
                    break
                rv = obj.get("metadata", {}).get("resourceVersion", rv)
                if event["type"] != "BOOKMARK":
                    handle(event["type"], obj)
        except ApiError as e:
            if e.status == 410:
                rv = ""
            else:
                log.warning("%s: %s", path, e)
                await asyncio.sleep(1)
        except (OSError, TimeoutError, ValueError) as e:
            log.warning("%s: watch interrupted (%s); resuming", path, e)
            await asyncio.sleep(0.5)
        except Exception as e:  # aiohttp errors and anything unexpected: never give up
            log.warning("%s: %r; resuming", path, e)
            await asyncio.sleep(1)
