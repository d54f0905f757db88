"""The HTTP endpoints an orchestrator and Prometheus poll.

``/healthz`` answers from the event loop itself: if it answers, the loop is alive.
``/readyz`` is 200 once every cache has synced and this process is either the
leader or a standby ready to take over; 503 before. ``/metrics`` is the exposition
of the manager's own registry.

One ``HealthServer`` serves the probes, the metrics, or both: ``sro run`` starts one
for each on ports of their own (a probe answers even while a slow scrape is being
served, and each can be exposed alone), tests one for everything.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from sro.observe import metrics as metrics_

SHUTDOWN_SECONDS = 1.0


class HealthServer:
    def __init__(
        self,
        *,
        metrics: metrics_.Metrics | None = None,
        ready: Callable[[], tuple[bool, str]] | None = None,
    ) -> None:
        """Serves ``/metrics`` if given ``metrics``, ``/healthz`` and ``/readyz`` if given ``ready``."""
        self._metrics = metrics
        self._ready = ready
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self, *, host: str, port: int) -> None:
        """Listen on ``host`` (empty: every interface) and ``port`` (0: a free one)."""
        app = web.Application()
        if self._ready is not None:
            app.router.add_get("/healthz", self._healthz)
            app.router.add_get("/readyz", self._readyz)
        if self._metrics is not None:
            app.router.add_get("/metrics", self._metrics_handler)
        # A probe or a scrape is answered at once; shutdown does not wait on a slow reader
        # (aiohttp's default would wait a minute for it).
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_SECONDS)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host or None, port)
        await site.start()
        # runner.addresses tells which port 0 became
        self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, _: web.Request) -> web.Response:
        assert self._ready is not None
        ok, why = self._ready()
        return web.Response(status=200 if ok else 503, text=why + "\n")

    async def _metrics_handler(self, _: web.Request) -> web.Response:
        assert self._metrics is not None
        body = self._metrics.exposition()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
