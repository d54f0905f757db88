"""List, then watch, forever: keeps one store equal to the server's view of a resource.

The resumption rules are client-go's (``controller-semantics.md``):

* LIST (in pages), take the list's resourceVersion, WATCH from it with bookmarks and a
  random server timeout of 5-10 minutes. Never watch without a version.
* Every event, bookmarks included, advances the version; a normal close re-watches
  from it without listing again.
* 410 Expired, as an HTTP status or as an in-stream ERROR event, means relist: first
  from the last version (``NotOlderThan``); if that is expired too, with "" (a
  consistent read). The store reports objects missing from the new list as deletions.
* The first 410 after a healthy watch relists at once; each further one in a row waits
  longer (``backoff.RelistBackoff``: 0.8 s doubling to 30 s, jittered), so a resource
  whose watches keep expiring is not listed in a tight loop.
* A list is read page by page (``limit``/``continue``); each page is projected into the
  store's views as it arrives (``Store.relist``) and the store changes at once at the end.
* Failures back off 0.8 s -> 30 s with jitter, reset after 2 healthy minutes, and
  never retry sooner than a 429's or 503's Retry-After (``Api.retry_delay``). A stream
  silent (no event, no bookmark) for the inactivity timeout (15/16 of it at the least:
  the deadline moves in steps) is dead: reconnect. A watch that ends at once without
  any event is an error, not a normal close.

A reflector given a ``calm`` (``sro.watch.calm``) reads its stream in batches while no
event of it has queued work for a while: what a settled fleet's Node heartbeats cost.

Changes go to ``on_change`` one by one, after the store has been updated, so a
handler reading the cache sees the new state. A failing handler is logged and does
not stop the stream.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

import structlog

from sro import errors
from sro import settings as settings_
from sro.cache import store as store_
from sro.kube import discovery, http
from sro.kube import errors as kerrors
from sro.watch import backoff as backoff_
from sro.watch import calm as calm_
from sro.watch import events

log = structlog.get_logger(__name__)

V = TypeVar("V")


class WatchMetrics(Protocol):
    def watch_started(self, resource: str) -> None: ...

    def watch_restarted(self, *, resource: str, reason: str) -> None: ...

    def watch_relisted(self, *, resource: str, reason: str) -> None: ...

    def watch_event(self, *, resource: str) -> None: ...

    def cache_size(self, *, resource: str, size: int) -> None: ...

    def watch_handler_failed(self, *, resource: str) -> None: ...

    def watch_woke(self, *, resource: str) -> None: ...

    def watch_rested(self, *, resource: str) -> None: ...

    def watch_read(self, *, resource: str) -> None: ...


def stream_name(plural: str, namespace: str = "") -> str:
    """The name a watch stream goes by in logs and metrics: its resource, and its namespace
    when it watches one (``configmaps.sro-system``)."""
    return plural if not namespace else f"{plural}.{namespace}"


EARLY_CLOSE = 0.9
"""A watch the server ends before this share of the timeout it was asked for was cut short
(the server's own timeout lands within a second of it): counted and logged apart from the
routine close, as it means the server dropped the watcher."""


class _Inactive(Exception):
    """The stream went silent past the inactivity timeout."""


class _VeryShort(Exception):
    """The watch ended at once without any event: the server is refusing it."""


class Reflector(Generic[V]):
    def __init__(
        self,
        *,
        api: http.Api,
        resource: discovery.Resource,
        store: store_.Store[V],
        on_change: Callable[[store_.Change[V]], None],
        settings: settings_.WatchSettings,
        metrics: WatchMetrics,
        namespace: str = "",
        label_selector: str = "",
        calm: calm_.Calm | None = None,
        body: type | None = None,
    ) -> None:
        self.resource = resource
        self.calm = calm
        self.store = store
        self.namespace = namespace
        self.label_selector = label_selector
        self.name = stream_name(resource.plural, namespace)
        # ``body``: the fields of each object the store's projection reads (events.Parser).
        self._parse = events.Parser(body=body, int64=resource.group in events.SCHEMA_GROUPS)
        self._api = api
        self._on_change = on_change
        self._settings = settings
        self._metrics = metrics
        self._backoff = backoff_.Backoff(
            initial=settings.backoff_initial, cap=settings.backoff_cap, reset_after=settings.backoff_reset
        )
        self._relist_backoff = backoff_.RelistBackoff(
            initial=settings.backoff_initial, cap=settings.backoff_cap
        )
        self._rv = ""
        self.synced = asyncio.Event()
        self._log = log.bind(resource=self.name, selector=label_selector or None)

    @property
    def has_synced(self) -> bool:
        return self.synced.is_set()

    @property
    def resource_version(self) -> str:
        return self._rv

    async def run(self) -> None:
        """Run until cancelled; run again to resume from the last version seen."""
        self._metrics.watch_started(self.name)
        relist: str | None = None if self._rv else "initial"
        list_from = ""
        while True:
            try:
                if relist is not None:
                    await self._list(list_from, reason=relist)
                    relist = None
                closed = await self._watch()
                self._backoff.healthy()
                self._relist_backoff.healthy()
                self._restarted(closed)
            except errors.Expired as exc:
                self._restarted("expired")
                if relist is None:
                    relist, list_from = "expired", self._rv
                else:  # the relist itself was expired: a consistent read from scratch
                    relist, list_from = "expired_again", ""
                delay = self._relist_backoff.next()
                self._log.info(
                    "resource version expired: relisting",
                    reason=relist,
                    error=str(exc),
                    in_a_row=self._relist_backoff.streak,
                    delay=round(delay, 2),
                )
                if delay:
                    await asyncio.sleep(delay)
            except (errors.SroError, events.MalformedEvent, _Inactive, _VeryShort) as exc:
                reason = "inactive" if isinstance(exc, _Inactive) else "error"
                self._restarted(reason)
                delay = self._api.retry_delay(exc, backoff=self._backoff.next())
                self._api.throttled(exc, resource=self.resource.plural, delay=delay)
                self._log.warning(
                    "watch failed: retrying", reason=reason, error=str(exc), delay=round(delay, 2)
                )
                await asyncio.sleep(delay)
            except Exception as exc:
                # Nothing an object or a stream can hold may end the process (and, on the
                # standby, the same object would end that one too): count it, say it with
                # the watch's name, and list again after a backoff.
                self._restarted("crashed")
                delay = self._backoff.next()
                self._log.error(
                    "watch crashed: relisting",
                    error=f"{type(exc).__name__}: {exc}"[:500],
                    delay=round(delay, 2),
                    exc_info=True,
                )
                relist, list_from = "crashed", ""
                await asyncio.sleep(delay)

    def _restarted(self, reason: str) -> None:
        self._metrics.watch_restarted(resource=self.name, reason=reason)

    def _params(self) -> dict[str, str]:
        return {"labelSelector": self.label_selector} if self.label_selector else {}

    def _complete(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """List items come without apiVersion and kind; the projections want them."""
        if "kind" in body and "apiVersion" in body:
            return body
        return {**body, "apiVersion": self.resource.api_version, "kind": self.resource.kind}

    async def _list(self, from_version: str, *, reason: str) -> None:
        self._metrics.watch_relisted(resource=self.name, reason=reason)
        path = self.resource.path(namespace=self.namespace)
        fresh = self.store.relist()
        token = ""
        list_rv = ""
        objects = pages = 0
        while True:
            params = {**self._params(), "limit": str(self._settings.page_size)}
            if token:
                params["continue"] = token
            elif from_version:
                params.update(resourceVersion=from_version, resourceVersionMatch="NotOlderThan")
            page = await self._api.request(
                "GET", path, params=params, resource=self.resource.plural, decode_as=self._parse.page
            )
            meta = page.get("metadata") or {}
            list_rv = list_rv or str(meta.get("resourceVersion", ""))
            token = str(meta.get("continue", "") or "")
            # Projected now, so only one raw page is alive at a time.
            objects += fresh.add(self._complete(item) for item in page.get("items") or ())
            pages += 1
            del page, meta
            if not token:
                break
        changes = fresh.commit(list_rv)
        self._rv = list_rv
        self._log.info(
            "listed",
            objects=objects,
            pages=pages,
            changes=len(changes),
            resource_version=list_rv,
            reason=reason,
        )
        for change in changes:
            self._deliver(change)
        self._metrics.cache_size(resource=self.name, size=len(self.store))
        self.synced.set()

    async def _watch(self) -> str:
        """Watch until the stream ends; how it ended: ``closed`` at the timeout asked for,
        ``closed_early`` well before it (the API server dropped the watcher: one that reads
        too slowly for the server's buffer, or a server going away)."""
        loop = asyncio.get_running_loop()
        inactivity = self._settings.inactivity_timeout
        timeout = random.randint(self._settings.server_timeout_min, self._settings.server_timeout_max)
        params = {
            **self._params(),
            "watch": "1",
            "resourceVersion": self._rv,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout),
        }
        started = loop.time()
        seen = 0
        path = self.resource.path(namespace=self.namespace)
        async with self._api.stream(
            path,
            params=params,
            open_timeout=inactivity,
            resource=self.resource.plural,
            rest=self._read,
        ) as lines:
            try:
                async with asyncio.timeout(inactivity) as deadline:
                    # Moved on a line only once a sixteenth of the timeout has passed since
                    # the last move: a converging fleet streams hundreds of lines a second,
                    # and each move replaces a timer. The stream is then judged dead after
                    # at least 15/16 of the timeout without a line.
                    step = inactivity / 16
                    moved = loop.time()
                    async for line in lines:
                        now = loop.time()
                        if now - moved >= step:
                            deadline.reschedule(now + inactivity)
                            moved = now
                        event = self._parse(line)
                        if event is None:
                            continue
                        seen += 1
                        self._handle(event)
            except TimeoutError as exc:
                raise _Inactive(f"no event for {inactivity:.0f} s") from exc
        lasted = loop.time() - started
        if not seen and lasted < self._settings.min_watch_duration:
            raise _VeryShort("watch closed at once without any event")
        if lasted < timeout * EARLY_CLOSE:
            self._log.info(
                "watch closed by the server before its timeout: resuming",
                lasted=round(lasted, 1),
                timeout=timeout,
                events=seen,
                resource_version=self._rv,
            )
            return "closed_early"
        return "closed"

    def _read(self, size: int) -> float:
        """After each read of the stream (``size`` bytes): counted, as events per read is what
        each wake-up of the stream carries; then the calm's rest, if the stream has one."""
        self._metrics.watch_read(resource=self.name)
        return self.calm.rest(size) if self.calm is not None else 0.0

    def _handle(self, event: events.WatchEvent) -> None:
        self._metrics.watch_event(resource=self.name)
        if event.type is events.EventType.ERROR:
            raise kerrors.from_status(event.object)
        self._rv = event.resource_version or self._rv
        self._relist_backoff.healthy()  # the watch delivered: the last relist worked
        if event.type is events.EventType.BOOKMARK:
            return
        body = self._complete(event.object)
        if event.type is events.EventType.DELETED:
            change = self.store.delete(body)
        else:
            change = self.store.upsert(body)
        if change is not None:
            self._deliver(change)
            self._metrics.cache_size(resource=self.name, size=len(self.store))

    def _deliver(self, change: store_.Change[V]) -> None:
        try:
            self._on_change(change)
        except Exception:  # a handler bug must not stop the stream
            obj = change.new if change.new is not None else change.old
            self._log.exception(
                "event handler failed",
                object=f"{getattr(obj, 'namespace', '') or ''}/{getattr(obj, 'name', '')}".lstrip("/"),
            )
            self._metrics.watch_handler_failed(resource=self.name)
