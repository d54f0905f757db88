"""The lifecycle owner: watches and caches, leader election, workers, health, shutdown.

How an engine plugs in (everything before ``run``)::

    m = manager.Manager(settings)
    m.watch_primary("sro.dev/v1alpha1", "SpecialResource")   # key = name ("ns/name" if namespaced)
    m.watch_owned("apps/v1", "DaemonSet")                    # cached by label sro.dev/owner,
    m.watch_owned("v1", "Pod")                               #   enqueues the owner
    m.watch_nodes(node_keys)     # node_keys(old: NodeView|None, new: NodeView|None) -> set[str]
    m.reconcile_with(reconcile)  # async (key) -> result.Result; raise to retry, Terminal to stop
    exit_code = await m.run()    # 0 after SIGTERM/SIGINT or stop(); 1 when the lease is lost

During ``run`` a reconcile reads ``m.store(api_version, kind)`` (``m.nodes``, ``m.pods``
with index ``by_node``, ``m.owned(sr)`` across every owned kind), writes through
``m.writer`` (``sro.apply.ssa.Writer``: apply (and dry run), create, delete, apply_status,
set_finalizers, patch_node, post_event, get, pod_log), asks ``m.is_served`` /
``m.is_namespaced`` (discovery cache), ``m.cluster_version()``, and starts a watch for a
kind first needed at runtime with ``await m.ensure_watch(api_version, kind)`` (or
``ensure_watched``). ``m.writer`` satisfies ``sro.engine.ports.Writer`` and
the manager itself ``sro.engine.ports.Kinds``.

Logging is set up by the caller, once per process: ``sro.observe.logs.configure(format=...)``;
every line logged during a reconcile then carries its key. Settings are
``sro.settings.Settings`` (frozen; each default explained where it is declared).

Order of ``run``: connect; probe the event loop and time garbage collections
(``observe.looplag``, ``observe.gcpause``); serve /healthz and
/readyz, and /metrics (``ServerSettings``);
start every reflector and wait until all have listed; then, with leader election on, stand
by (caches stay warm, events keep filling the queue) until the Lease is ours; then start
the workers.
Losing the Lease cancels the workers at once (no write after the renew deadline) and
``run`` returns 1. A stop request stops taking keys, lets in-flight reconciles finish
within the grace period, releases the Lease, closes every stream and the session, and
returns 0.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import structlog

from sro import settings as settings_
from sro.apply import ssa
from sro.cache import projections
from sro.cache import store as store_
from sro.kube import counting, http, lease
from sro.kube import discovery as discovery_
from sro.observe import gcpause, health, looplag
from sro.observe import metrics as metrics_
from sro.queue import ratelimit, workqueue
from sro.runtime import caches as caches_
from sro.runtime import controller as controller_
from sro.runtime import exit_watch as exit_watch_
from sro.runtime import handlers, heap, stopping
from sro.watch import reflector as reflector_

log = structlog.get_logger(__name__)

if TYPE_CHECKING:  # one Metrics serves every runtime part's metrics protocol
    _queue_metrics: workqueue.QueueMetrics = metrics_.Metrics()
    _api_metrics: counting.ApiMetrics = metrics_.Metrics()
    _watch_metrics: reflector_.WatchMetrics = metrics_.Metrics()
    _controller_metrics: controller_.ControllerMetrics = metrics_.Metrics()


class Role(enum.StrEnum):
    """Where the process stands (``/readyz`` answers with it)."""

    STARTING = "starting"
    STANDBY = "standby"
    LEADER = "leader"
    STOPPING = "stopping"


class Manager:
    def __init__(
        self,
        settings: settings_.Settings | None = None,
        *,
        metrics: metrics_.Metrics | None = None,
        exit_watch: exit_watch_.ExitWatch | None = None,
    ) -> None:
        """``exit_watch`` (the process's, ``sro run``): armed once ``run`` must end, so a
        shutdown that hangs still ends the process."""
        self.settings = settings or settings_.Settings()
        self.metrics = metrics or metrics_.Metrics()
        self._exit_watch = exit_watch
        self.queue: workqueue.WorkQueue[handlers.QueueKey] = workqueue.WorkQueue(
            limiter=ratelimit.default(
                base=self.settings.queue.backoff_base, cap=self.settings.queue.backoff_cap
            ),
            metrics=self.metrics,
            pace=self.settings.queue.pace,
            rest_cap=self.settings.queue.rest_cap,
            rest_ratio=self.settings.queue.rest_ratio,
            busy=self.settings.queue.busy,
        )
        self.role = Role.STARTING
        self.identity = ""
        self.caches = caches_.Caches(
            settings=self.settings.watch, metrics=self.metrics, enqueue=self.queue.add
        )
        self._reconcile: controller_.Reconcile | None = None
        self._stopping = asyncio.Event()
        self._api: http.Api | None = None
        self._discovery: discovery_.Discovery | None = None
        self._writer: ssa.Writer | None = None
        self._elector: lease.LeaderElector | None = None
        self.health: health.HealthServer | None = None
        """The probe server (and /metrics too, unless they are served apart) while running."""
        self.metrics_server: health.HealthServer | None = None

    # -- registration ---------------------------------------------------------

    def watch_primary(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str = "",
        own_status: handlers.OwnStatus | None = None,
    ) -> None:
        """Watch the primary kind; ``own_status`` tells the status writes of this process
        (which need no reconcile) from anyone else's (``handlers.primary``)."""
        self.caches.add(
            caches_.WatchSpec(
                api_version=api_version,
                kind=kind,
                namespace=namespace,
                role=caches_.Role.PRIMARY,
                own_status=own_status,
            )
        )

    def watch_owned(
        self, api_version: str, kind: str, *, namespace: str = "", status_read: bool = True
    ) -> None:
        """Watch an owned kind; with ``status_read`` false a change of an object's status
        alone enqueues nothing (no reconcile reads it: a DaemonSet judged by its pods)."""
        self.caches.add(
            caches_.WatchSpec(
                api_version=api_version,
                kind=kind,
                namespace=namespace,
                label_selector=caches_.OWNED_SELECTOR,
                status_read=status_read,
            )
        )

    def watch_nodes(self, mapper: handlers.NodeMapper) -> None:
        self.caches.node_mapper = mapper
        node_api, node_kind = caches_.NODE_API
        self.caches.add(caches_.WatchSpec(api_version=node_api, kind=node_kind, role=caches_.Role.NODES))

    def watch_mapped(
        self,
        api_version: str,
        kind: str,
        *,
        mapper: handlers.Mapper,
        namespace: str = "",
        label_selector: str = "",
    ) -> None:
        """Watch any kind; each change enqueues the keys ``mapper`` returns for it."""
        self.caches.add(
            caches_.WatchSpec(
                api_version=api_version,
                kind=kind,
                namespace=namespace,
                label_selector=label_selector,
                role=caches_.Role.MAPPED,
                mapper=mapper,
            )
        )

    def reconcile_with(self, reconcile: controller_.Reconcile) -> None:
        self._reconcile = reconcile

    # -- what reconciles use --------------------------------------------------

    @property
    def api(self) -> http.Api:
        if self._api is None:
            raise RuntimeError("the manager is not running")
        return self._api

    @property
    def discovery(self) -> discovery_.Discovery:
        if self._discovery is None:
            raise RuntimeError("the manager is not running")
        return self._discovery

    @property
    def writer(self) -> ssa.Writer:
        if self._writer is None:
            raise RuntimeError("the manager is not running")
        return self._writer

    def store(self, api_version: str, kind: str, *, namespace: str = "") -> store_.Store[Any]:
        return self.caches.store(api_version, kind, namespace=namespace)

    @property
    def nodes(self) -> store_.Store[Any]:
        return self.caches.store(*caches_.NODE_API)

    @property
    def pods(self) -> store_.Store[Any]:
        return self.caches.store(*caches_.POD_API)

    def owned(self, sr_name: str) -> list[projections.ObjectView]:
        """Every cached object labelled ``sro.dev/owner: <sr_name>`` of a generic owned kind."""
        return self.caches.owned(sr_name)

    def lagging(self, kinds: Iterable[tuple[str, str]]) -> frozenset[tuple[str, str]]:
        """Of ``kinds``, those whose cache has not yet shown this process's last write."""
        return self.caches.lagging(kinds, written=self.writer.written_version)

    def is_served(self, api_version: str, kind: str) -> bool:
        return self.discovery.facts.is_served(api_version, kind)

    def is_namespaced(self, api_version: str, kind: str) -> bool | None:
        return self.discovery.facts.is_namespaced(api_version, kind)

    @property
    def has_synced(self) -> bool:
        return self.caches.has_synced

    def ready(self) -> tuple[bool, str]:
        if not self.has_synced:
            return False, "caches not synced"
        if self.role not in (Role.LEADER, Role.STANDBY):
            return False, str(self.role)
        return True, str(self.role)

    async def ensure_watch(self, api_version: str, kind: str) -> store_.Store[Any]:
        """Watch and cache a kind first needed at run time (``caches.Caches.ensure_watch``)."""
        return await self.caches.ensure_watch(api_version, kind)

    async def ensure_watched(self, api_version: str, kind: str) -> None:
        """``ensure_watch`` without the store (the engine's ``Kinds`` protocol)."""
        await self.ensure_watch(api_version, kind)

    def cluster_version(self) -> tuple[str, str, str]:
        """(gitVersion, major, minor) of the API server, from the last full discovery read."""
        if self._discovery is None:
            return ("", "", "")
        return self._discovery.facts.version.as_tuple()

    def stop(self) -> None:
        """Ask ``run`` to shut down (what SIGTERM and SIGINT do)."""
        self._stopping.set()
        self._must_exit(self.settings.controller.grace_period, why="stop requested")

    def _must_exit(self, within: float, *, why: str) -> None:
        if self._exit_watch is not None:
            self._exit_watch.arm(seconds=within + self.settings.controller.exit_slack, why=why)

    # -- the lifecycle --------------------------------------------------------

    async def run(self) -> int:
        if self._reconcile is None:
            raise RuntimeError("no reconcile function: call reconcile_with() first")
        restore = stopping.on_signals(self.stop)
        try:
            async with await http.Api.connect(self.settings.api, metrics=self.metrics) as api:
                self._api = api
                self._discovery = discovery_.Discovery(api)
                self._writer = ssa.Writer(api=api, discovery=self._discovery, fence=self._may_write)
                await self._discovery.read()  # the version and every served kind, once
                pauses = gcpause.Pauses().install()
                lag = asyncio.create_task(
                    looplag.watch(metrics=self.metrics, pauses=pauses), name="sro-loop-lag"
                )
                try:
                    await self._serve()
                    async with asyncio.TaskGroup() as group:
                        await self.caches.start_all(group, api=api, discovery=self._discovery)
                        code = await self._lifecycle()
                        self.caches.stop_all()
                finally:
                    lag.cancel()
                    pauses.remove()
                    self.caches.stop_all()
                    for server in (self.health, self.metrics_server):
                        if server is not None:
                            await server.stop()
        finally:
            restore()
        log.info("manager stopped", exit_code=code)
        return code

    async def _serve(self) -> None:
        """The probe server, and /metrics on a server of its own, beside it, or nowhere."""
        server = self.settings.server
        shared = server.metrics and server.metrics_port is None
        if server.port is not None:
            self.health = health.HealthServer(metrics=self.metrics if shared else None, ready=self.ready)
            await self.health.start(host=server.address, port=server.port)
        if server.metrics and server.metrics_port is not None:
            self.metrics_server = health.HealthServer(metrics=self.metrics)
            await self.metrics_server.start(host=server.metrics_address, port=server.metrics_port)

    async def _lifecycle(self) -> int:
        synced = self.caches.synced()
        if not await stopping.unless(self._stopping, synced):
            return 0
        log.info("caches synced", caches=len(self.caches))
        heap.settle()
        assert self._reconcile is not None
        controller = controller_.Controller(
            queue=self.queue,
            reconcile=self._reconcile,
            settings=self.settings.controller,
            metrics=self.metrics,
        )
        if not self.settings.lease.enabled:
            self._leading(True)
            return await self._work(controller, elector=None)
        elector = lease.LeaderElector(api=self.api, settings=self.settings.lease, on_change=self._leading)
        self._elector = elector
        self.identity = elector.identity
        self.role = Role.STANDBY
        log.info("standing by for the lease", identity=self.identity)
        if not await stopping.unless(self._stopping, elector.acquire()):
            self.role = Role.STOPPING
            return 0
        return await self._work(controller, elector=elector)

    def _may_write(self) -> bool:
        """The write fence: without leader election, always; with it, only while the Lease
        is held and was renewed within the renew deadline."""
        if not self.settings.lease.enabled:
            return True
        return self._elector is not None and self._elector.may_write()

    def _leading(self, leading: bool) -> None:
        self.metrics.leading(lease=self.settings.lease.name, leading=leading)
        self.role = Role.LEADER if leading else (Role.STOPPING if self._stopping.is_set() else Role.STANDBY)

    async def _work(self, controller: controller_.Controller, *, elector: lease.LeaderElector | None) -> int:
        workers = asyncio.create_task(controller.run(), name="sro-workers")
        holding = asyncio.create_task(elector.hold() if elector else asyncio.Event().wait(), name="sro-lease")
        stop = asyncio.create_task(self._stopping.wait())
        await asyncio.wait({workers, holding, stop}, return_when=asyncio.FIRST_COMPLETED)
        code = 0
        if holding.done():
            # Lost the lease: no write may happen from here on, so cancel mid-flight.
            self._must_exit(0, why="lost the lease")
            workers.cancel()
            code = 1
        else:
            # Drain in-flight reconciles, still watching the lease: one lost meanwhile ends
            # the drain at once (the writer's fence already refuses their writes).
            controller.stop()
            self.role = Role.STOPPING
            done, _ = await asyncio.wait(
                {workers, holding},
                timeout=self.settings.controller.grace_period,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if holding in done:
                log.error("lost the lease while draining: cancelling in-flight reconciles")
                self._must_exit(0, why="lost the lease")
                workers.cancel()
                code = 1
            elif workers not in done:
                log.warning("in-flight reconciles outlived the grace period: cancelling")
                workers.cancel()
            if workers.done() and not workers.cancelled() and workers.exception() is not None:
                code = 1
        stop.cancel()
        holding.cancel()
        await asyncio.gather(workers, holding, stop, return_exceptions=True)
        if elector is not None:
            if code == 0:
                await elector.release()
            self._leading(False)
        return code
