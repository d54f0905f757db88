"""The manager's caches: one reflector and store per watched kind, and what reads them.

Each ``WatchSpec`` says what to watch (a kind, maybe a namespace and a label selector) and
what a change means (``Role``: the primary kind's key, the owner of an owned object, the
keys a mapper names, or the SpecialResources a Node concerns). ``Caches`` starts a
reflector per spec inside the manager's task group, answers the reads reconciles make
(stores, owned objects across kinds, whether a cache has seen this process's own writes)
and starts a watch for a kind first needed at run time, never waiting without a deadline.
"""

from __future__ import annotations

import asyncio
import enum
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import structlog

from sro import errors
from sro import settings as settings_
from sro.cache import indexes, projections
from sro.cache import store as store_
from sro.kube import discovery as discovery_
from sro.kube import http
from sro.model import bodies
from sro.model import specialresource as sr_model
from sro.runtime import handlers
from sro.watch import calm as calm_
from sro.watch import reflector as reflector_

log = structlog.get_logger(__name__)

OWNED_SELECTOR = sr_model.OWNER_LABEL  # "label exists": unrelated objects cost nothing
NODE_API = ("v1", "Node")
POD_API = ("v1", "Pod")
WATCH_SYNC_DEADLINE = 30.0
"""Seconds ``ensure_watch`` waits for a new kind's first list: far more than a list of the
operator's own objects takes, short enough that a worker is never held for long."""


class Role(enum.StrEnum):
    """What a change of a watched kind means for the queue (``handlers``)."""

    PRIMARY = "primary"  # the reconciled kind: its own key
    OWNED = "owned"  # made by sro: the key in its owner label
    NODES = "nodes"  # Nodes: the keys the node mapper says a change concerns
    MAPPED = "mapped"  # any kind: the keys its mapper returns


@dataclass(frozen=True, kw_only=True)
class WatchSpec:
    api_version: str
    kind: str
    namespace: str = ""
    label_selector: str = ""
    role: Role = Role.OWNED
    mapper: handlers.Mapper | None = field(default=None, compare=False)
    """For ``mapped`` watches: which keys a change concerns."""
    own_status: handlers.OwnStatus | None = field(default=None, compare=False)
    """For the primary watch: which status-only changes are this process's own writes."""
    status_read: bool = field(default=True, compare=False)
    """For owned watches: whether reconciles read the kind's status (``handlers.owned``)."""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.api_version, self.kind, self.namespace)


class Caches:
    """Every watched kind's reflector and store; see the module docstring."""

    def __init__(
        self,
        *,
        settings: settings_.WatchSettings,
        metrics: reflector_.WatchMetrics,
        enqueue: handlers.Enqueue,
    ) -> None:
        self._settings = settings
        self._metrics = metrics
        self._enqueue = enqueue
        self.specs: dict[tuple[str, str, str], WatchSpec] = {}
        self.node_mapper: handlers.NodeMapper | None = None
        self._reflectors: dict[tuple[str, str, str], reflector_.Reflector[Any]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._group: asyncio.TaskGroup | None = None
        self._api: http.Api | None = None
        self._discovery: discovery_.Discovery | None = None

    def add(self, spec: WatchSpec) -> None:
        self.specs[spec.key] = spec

    # -- reads ------------------------------------------------------------------

    def store(self, api_version: str, kind: str, *, namespace: str = "") -> store_.Store[Any]:
        return self._reflectors[(api_version, kind, namespace)].store

    def owned(self, sr_name: str) -> list[projections.ObjectView]:
        """Every cached object labelled ``sro.dev/owner: <sr_name>`` of a generic owned kind."""
        found: list[projections.ObjectView] = []
        for key, spec in self.specs.items():
            if spec.role is Role.OWNED and (spec.api_version, spec.kind) not in (NODE_API, POD_API):
                found.extend(self._reflectors[key].store.by_index(indexes.BY_OWNER, sr_name))
        return found

    def lagging(
        self, kinds: Iterable[tuple[str, str]], *, written: Callable[[str, str], int]
    ) -> frozenset[tuple[str, str]]:
        """Of ``kinds``, those whose cluster-wide cache has not yet shown this process's last
        write to them (``written``: the resourceVersion it returned): what a reconcile must
        not trust for an irreversible step until the watch catches up. A kind no cache
        watches is not lagging: nothing reads it from a cache."""
        out = set()
        for api_version, kind in kinds:
            reflector = self._reflectors.get((api_version, kind, ""))
            version = written(api_version, kind)
            if reflector is None or not version:
                continue
            if bodies.version_number(reflector.resource_version) < version:
                out.add((api_version, kind))
        return frozenset(out)

    @property
    def has_synced(self) -> bool:
        return bool(self._reflectors) and all(r.has_synced for r in self._reflectors.values())

    async def synced(self) -> None:
        """Return once every cache has listed."""
        await asyncio.gather(*(r.synced.wait() for r in self._reflectors.values()))

    def __len__(self) -> int:
        return len(self._reflectors)

    # -- running ----------------------------------------------------------------

    async def start_all(
        self, group: asyncio.TaskGroup, *, api: http.Api, discovery: discovery_.Discovery
    ) -> None:
        """Start a reflector for every registered spec inside ``group``."""
        self._group, self._api, self._discovery = group, api, discovery
        for spec in list(self.specs.values()):
            await self._start_or_skip(spec)

    def stop_all(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._group = None

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
            api, discovery = self._running()
            resource = await discovery.resource(api_version, kind)
            await api.request(
                "GET",
                resource.path(),
                params={"limit": "1", "labelSelector": OWNED_SELECTOR},
                resource=resource.plural,
                retry=False,
            )
            spec = WatchSpec(api_version=api_version, kind=kind, label_selector=OWNED_SELECTOR)
            self.add(spec)
            await self._start(spec)
        try:
            async with asyncio.timeout(WATCH_SYNC_DEADLINE):
                await self._reflectors[key].synced.wait()
        except TimeoutError:
            raise errors.TransportError(
                f"the cache of {kind} ({api_version}) has not listed within {WATCH_SYNC_DEADLINE:.0f} s"
            ) from None
        return self._reflectors[key].store

    def _running(self) -> tuple[http.Api, discovery_.Discovery]:
        if self._group is None or self._api is None or self._discovery is None:
            raise RuntimeError("the manager is not running")
        return self._api, self._discovery

    async def _start_or_skip(self, spec: WatchSpec) -> None:
        """Start a registered watch; an owned kind the server does not serve (yet) is skipped:
        ``ensure_watch`` starts it once it is needed and served."""
        try:
            await self._start(spec)
        except errors.NotFound:
            if spec.role is not Role.OWNED:
                raise
            log.warning(
                "owned kind not served: not watched for now", kind=spec.kind, api_version=spec.api_version
            )
            del self.specs[spec.key]

    async def _start(self, spec: WatchSpec) -> None:
        api, discovery = self._running()
        assert self._group is not None
        resource = await discovery.resource(spec.api_version, spec.kind)
        primary = next((s for s in self.specs.values() if s.role is Role.PRIMARY), None)
        owner = (primary.api_version, primary.kind) if spec.role is Role.OWNED and primary else None
        project = projections.for_kind(spec.api_version, spec.kind, controlled_by=owner)
        store: store_.Store[Any] = store_.Store(
            resource=resource.plural,
            project=project,
            indexers=indexes.for_kind(spec.api_version, spec.kind),
            keep_gone=projections.kept_when_gone(spec.api_version, spec.kind),
            journal_index=indexes.journal_for(spec.api_version, spec.kind),
            project_again=projections.again_for_kind(spec.api_version, spec.kind),
        )
        stream = reflector_.stream_name(resource.plural, spec.namespace)
        calm = self._calm(spec, stream)
        reflector: reflector_.Reflector[Any] = reflector_.Reflector(
            api=api,
            resource=resource,
            store=store,
            on_change=self._handler(spec, self._counted(stream, calm=calm)),
            settings=self._settings,
            metrics=self._metrics,
            namespace=spec.namespace,
            label_selector=spec.label_selector,
            calm=calm,
            body=projections.body_for_kind(spec.api_version, spec.kind),
        )
        self._reflectors[spec.key] = reflector
        self._tasks.append(self._group.create_task(reflector.run(), name=f"sro-reflector-{reflector.name}"))

    def _calm(self, spec: WatchSpec, stream: str) -> calm_.Calm | None:
        """How the streams that grow with the fleet read in batches (``sro.watch.calm``):
        the Node watch rests while its events queue nothing (a settled fleet's
        heartbeats) and, briefly, while they do; the Pod watch briefly while its events
        queue work (a converging fleet's pods). Other streams read every event at once."""
        watch = self._settings
        if spec.role is Role.NODES:
            rest = watch.calm_rest
        elif (spec.api_version, spec.kind) == POD_API:
            rest = 0.0
        else:
            return None
        return calm_.Calm(
            rest=rest,
            busy_rest=watch.busy_rest,
            quiet_for=watch.calm_after,
            on_rest=functools.partial(self._metrics.watch_rested, resource=stream),
        )

    def _counted(self, stream: str, *, calm: calm_.Calm | None) -> handlers.Enqueue:
        """The enqueue of ``stream``'s handler: each add counted by stream (``sro_watch_wakes``),
        and, for a stream read in batches when calm, ending its calm."""
        metrics, enqueue = self._metrics, self._enqueue

        def counted(key: handlers.QueueKey) -> None:
            metrics.watch_woke(resource=stream)
            if calm is not None:
                calm.stirred()
            enqueue(key)

        return counted

    def _handler(self, spec: WatchSpec, enqueue: handlers.Enqueue) -> handlers.Handler:
        if spec.role is Role.PRIMARY:
            return handlers.primary(enqueue, own_status=spec.own_status)
        if spec.role is Role.MAPPED and spec.mapper is not None:
            return handlers.mapped(enqueue, spec.mapper)
        if spec.role is Role.NODES:
            if self.node_mapper is None:
                raise RuntimeError("watch_nodes needs a mapper")
            return handlers.nodes(enqueue, self.node_mapper)
        namespaced = any(s.role is Role.PRIMARY and s.namespace for s in self.specs.values())
        return handlers.owned(enqueue, namespaced_owner=namespaced, status_read=spec.status_read)
