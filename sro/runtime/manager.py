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

Order of ``run``: connect; serve /healthz, /readyz, /metrics; start every reflector
and wait until all have listed; then, with leader election on, stand by (caches stay
warm, events keep filling the queue) until the Lease is ours; then start the workers.
Losing the Lease cancels the workers at once (no write after the renew deadline) and
``run`` returns 1. A stop request stops taking keys, lets in-flight reconciles finish
within the grace period, releases the Lease, closes every stream and the session, and
returns 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from sro import errors
from sro import settings as settings_
from sro.apply import ssa
from sro.cache import indexes, projections
from sro.cache import store as store_
from sro.kube import discovery as discovery_
from sro.kube import http, lease
from sro.observe import health
from sro.observe import metrics as metrics_
from sro.queue import ratelimit, workqueue
from sro.runtime import controller as controller_
from sro.runtime import handlers
from sro.watch import reflector as reflector_

log = structlog.get_logger(__name__)

if TYPE_CHECKING:  # one Metrics serves every runtime part's metrics protocol
    _queue_metrics: workqueue.QueueMetrics = metrics_.Metrics()
    _api_metrics: http.ApiMetrics = metrics_.Metrics()
    _watch_metrics: reflector_.WatchMetrics = metrics_.Metrics()
    _controller_metrics: controller_.ControllerMetrics = metrics_.Metrics()

OWNED_SELECTOR = projections.OWNER_LABEL  # "label exists": unrelated objects cost nothing
NODE_API = ("v1", "Node")
POD_API = ("v1", "Pod")
WATCH_SYNC_DEADLINE = 30.0
"""Seconds ``ensure_watch`` waits for a new kind's first list: far more than a list of the
operator's own objects takes, short enough that a worker is never held for long."""


@dataclass(frozen=True, kw_only=True)
class WatchSpec:
    api_version: str
    kind: str
    namespace: str = ""
    label_selector: str = ""
    role: str = "owned"  # primary | owned | nodes | mapped
    mapper: handlers.Mapper | None = field(default=None, compare=False)
    """For ``mapped`` watches: which keys a change concerns."""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.api_version, self.kind, self.namespace)


class Manager:
    def __init__(
        self, settings: settings_.Settings | None = None, *, metrics: metrics_.Metrics | None = None
    ) -> None:
        self.settings = settings or settings_.Settings()
        self.metrics = metrics or metrics_.Metrics()
        self.queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(
            limiter=ratelimit.default(
                base=self.settings.queue.backoff_base, cap=self.settings.queue.backoff_cap
            ),
            metrics=self.metrics,
        )
        self.role = "starting"  # starting | standby | leader | stopping
        self.identity = ""
        self._specs: dict[tuple[str, str, str], WatchSpec] = {}
        self._node_mapper: handlers.NodeMapper | None = None
        self._reconcile: controller_.Reconcile | None = None
        self._reflectors: dict[tuple[str, str, str], reflector_.Reflector[Any]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._group: asyncio.TaskGroup | None = None
        self._stopping = asyncio.Event()
        self._api: http.Api | None = None
        self._discovery: discovery_.Discovery | None = None
        self._writer: ssa.Writer | None = None
        self._elector: lease.LeaderElector | None = None
        self.health: health.HealthServer | None = None

    # -- registration ---------------------------------------------------------

    def watch_primary(self, api_version: str, kind: str, *, namespace: str = "") -> None:
        self._add(WatchSpec(api_version=api_version, kind=kind, namespace=namespace, role="primary"))

    def watch_owned(self, api_version: str, kind: str, *, namespace: str = "") -> None:
        self._add(
            WatchSpec(api_version=api_version, kind=kind, namespace=namespace, label_selector=OWNED_SELECTOR)
        )

    def watch_nodes(self, mapper: handlers.NodeMapper) -> None:
        self._node_mapper = mapper
        self._add(WatchSpec(api_version=NODE_API[0], kind=NODE_API[1], role="nodes"))

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
        self._add(
            WatchSpec(
                api_version=api_version,
                kind=kind,
                namespace=namespace,
                label_selector=label_selector,
                role="mapped",
                mapper=mapper,
            )
        )

    def reconcile_with(self, reconcile: controller_.Reconcile) -> None:
        self._reconcile = reconcile

    def _add(self, spec: WatchSpec) -> None:
        self._specs[spec.key] = spec

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
        return self._reflectors[(api_version, kind, namespace)].store

    @property
    def nodes(self) -> store_.Store[Any]:
        return self.store(*NODE_API)

    @property
    def pods(self) -> store_.Store[Any]:
        return self.store(*POD_API)

    def owned(self, sr_name: str) -> list[projections.ObjectView]:
        """Every cached object labelled ``sro.dev/owner: <sr_name>`` of a generic owned kind."""
        found: list[projections.ObjectView] = []
        for key, spec in self._specs.items():
            if spec.role == "owned" and (spec.api_version, spec.kind) not in (NODE_API, POD_API):
                found.extend(self._reflectors[key].store.by_index(indexes.BY_OWNER, sr_name))
        return found

    def lagging(self, kinds: Iterable[tuple[str, str]]) -> frozenset[tuple[str, str]]:
        """Of ``kinds``, those whose cluster-wide cache has not yet shown this process's last
        write to them (its resourceVersion): what a reconcile must not trust for an
        irreversible step until the watch catches up. A kind no cache watches is not
        lagging: nothing reads it from a cache."""
        out = set()
        for api_version, kind in kinds:
            reflector = self._reflectors.get((api_version, kind, ""))
            written = self.writer.written_version(api_version, kind)
            if reflector is None or not written:
                continue
            try:
                seen = int(reflector.resource_version or 0)
            except ValueError:
                seen = 0
            if seen < written:
                out.add((api_version, kind))
        return frozenset(out)

    def is_served(self, api_version: str, kind: str) -> bool:
        return self.discovery.facts.is_served(api_version, kind)

    def is_namespaced(self, api_version: str, kind: str) -> bool | None:
        return self.discovery.facts.is_namespaced(api_version, kind)

    @property
    def has_synced(self) -> bool:
        return bool(self._reflectors) and all(r.has_synced for r in self._reflectors.values())

    def ready(self) -> tuple[bool, str]:
        if not self.has_synced:
            return False, "caches not synced"
        if self.role not in ("leader", "standby"):
            return False, self.role
        return True, self.role

    async def ensure_watch(self, api_version: str, kind: str) -> store_.Store[Any]:
        """Watch (by owner label) and cache a kind first needed at runtime; return once listed.

        Never waits without a deadline: a first list the server refuses (403: the service
        account may not list the kind; 404: not served) raises its typed error at once,
        before any watch is registered, so the caller can report it and a later call tries
        again; a cache that has not listed within ``WATCH_SYNC_DEADLINE`` raises
        ``TransportError`` (retried) and keeps listing in the background.
        """
        key = (api_version, kind, "")
        if key not in self._reflectors:
            resource = await self.discovery.resource(api_version, kind)
            await self.api.request(
                "GET",
                resource.path(),
                params={"limit": "1", "labelSelector": OWNED_SELECTOR},
                resource=resource.plural,
                retry=False,
            )
            spec = WatchSpec(api_version=api_version, kind=kind, label_selector=OWNED_SELECTOR)
            self._add(spec)
            await self._start(spec)
        try:
            async with asyncio.timeout(WATCH_SYNC_DEADLINE):
                await self._reflectors[key].synced.wait()
        except TimeoutError:
            raise errors.TransportError(
                f"the cache of {kind} ({api_version}) has not listed within {WATCH_SYNC_DEADLINE:.0f} s"
            ) from None
        return self._reflectors[key].store

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

    # -- the lifecycle --------------------------------------------------------

    async def run(self) -> int:
        if self._reconcile is None:
            raise RuntimeError("no reconcile function: call reconcile_with() first")
        restore = self._install_signals()
        try:
            async with await http.Api.connect(self.settings.api, metrics=self.metrics) as api:
                self._api = api
                self._discovery = discovery_.Discovery(api)
                self._writer = ssa.Writer(api=api, discovery=self._discovery, fence=self._may_write)
                await self._discovery.read()  # the version and every served kind, once
                self.health = health.HealthServer(metrics=self.metrics, ready=self.ready)
                await self.health.start(host=self.settings.server.address, port=self.settings.server.port)
                try:
                    async with asyncio.TaskGroup() as group:
                        self._group = group
                        for spec in list(self._specs.values()):
                            await self._start_or_skip(spec)
                        code = await self._lifecycle()
                        for task in self._tasks:
                            task.cancel()
                finally:
                    self._group = None
                    await self.health.stop()
        finally:
            restore()
        log.info("manager stopped", exit_code=code)
        return code

    async def _start_or_skip(self, spec: WatchSpec) -> None:
        """Start a registered watch; an owned kind the server does not serve (yet) is skipped:
        ``ensure_watch`` starts it once it is needed and served."""
        try:
            await self._start(spec)
        except errors.NotFound:
            if spec.role != "owned":
                raise
            log.warning(
                "owned kind not served: not watched for now", kind=spec.kind, api_version=spec.api_version
            )
            del self._specs[spec.key]

    async def _start(self, spec: WatchSpec) -> None:
        if self._group is None:
            raise RuntimeError("the manager is not running")
        resource = await self.discovery.resource(spec.api_version, spec.kind)
        project = projections.for_kind(spec.api_version, spec.kind)
        store: store_.Store[Any] = store_.Store(
            resource=resource.plural, project=project, indexers=indexes.for_kind(spec.api_version, spec.kind)
        )
        reflector: reflector_.Reflector[Any] = reflector_.Reflector(
            api=self.api,
            resource=resource,
            store=store,
            on_change=self._handler(spec),
            settings=self.settings.watch,
            metrics=self.metrics,
            namespace=spec.namespace,
            label_selector=spec.label_selector,
        )
        self._reflectors[spec.key] = reflector
        self._tasks.append(self._group.create_task(reflector.run(), name=f"sro-reflector-{reflector.name}"))

    def _handler(self, spec: WatchSpec) -> handlers.Handler:
        if spec.role == "primary":
            return handlers.primary(self.queue.add)
        if spec.role == "mapped" and spec.mapper is not None:
            return handlers.mapped(self.queue.add, spec.mapper)
        if spec.role == "nodes":
            mapper = self._node_mapper
            if mapper is None:
                raise RuntimeError("watch_nodes needs a mapper")
            return handlers.nodes(self.queue.add, mapper)
        namespaced = any(s.role == "primary" and s.namespace for s in self._specs.values())
        return handlers.owned(self.queue.add, namespaced_owner=namespaced)

    async def _until_stopped(self, awaitable: Any) -> bool:
        """Await ``awaitable`` unless a stop comes first; True if it completed, and what it
        raised if it failed (a failure must never pass for a stop)."""
        task = asyncio.ensure_future(awaitable)
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if task.done() and not task.cancelled():
            task.result()  # raises what the awaitable raised
            return True
        return False

    async def _lifecycle(self) -> int:
        synced = asyncio.gather(*(r.synced.wait() for r in self._reflectors.values()))
        if not await self._until_stopped(synced):
            return 0
        log.info("caches synced", caches=len(self._reflectors))
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
        self.role = "standby"
        log.info("standing by for the lease", identity=self.identity)
        if not await self._until_stopped(elector.acquire()):
            self.role = "stopping"
            return 0
        return await self._work(controller, elector=elector)

    def _may_write(self) -> bool:
        """The write fence: without leader election, always; with it, only while the Lease
        is held and was renewed within the renew deadline."""
        if not self.settings.lease.enabled:
            return True
        return self._elector is not None and self._elector.may_write()

    def _leading(self, leading: bool) -> None:
        self.metrics.leader.set(1 if leading else 0)
        self.role = "leader" if leading else ("stopping" if self._stopping.is_set() else "standby")

    async def _work(self, controller: controller_.Controller, *, elector: lease.LeaderElector | None) -> int:
        workers = asyncio.create_task(controller.run(), name="sro-workers")
        holding = asyncio.create_task(elector.hold() if elector else asyncio.Event().wait(), name="sro-lease")
        stop = asyncio.create_task(self._stopping.wait())
        await asyncio.wait({workers, holding, stop}, return_when=asyncio.FIRST_COMPLETED)
        code = 0
        if holding.done():
            # Lost the lease: no write may happen from here on, so cancel mid-flight.
            workers.cancel()
            code = 1
        else:
            # Drain in-flight reconciles, still watching the lease: one lost meanwhile ends
            # the drain at once (the writer's fence already refuses their writes).
            controller.stop()
            self.role = "stopping"
            done, _ = await asyncio.wait(
                {workers, holding},
                timeout=self.settings.controller.grace_period,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if holding in done:
                log.error("lost the lease while draining: cancelling in-flight reconciles")
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

    def _install_signals(self) -> Callable[[], None]:
        loop = asyncio.get_running_loop()
        installed = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self.stop)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass  # not the main thread (tests): stop() is called directly

        def restore() -> None:
            for sig in installed:
                loop.remove_signal_handler(sig)

        return restore
