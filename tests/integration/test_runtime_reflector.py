"""Reflectors against the real API server: resumption across an apiserver restart and a compaction.

Covers: the cache equals a fresh list after kube-apiserver is restarted while objects
are created, changed and deleted; no deletion is missed; an etcd compaction forces a
410 and a relist that delivers an object deleted in the gap as a deletion; a paged
relist of 1,000 objects over a populated store ends equal to a fresh list, with the
gap's deletions delivered; a relist's memory follows one page, not the whole list. The
watched kind is ConfigMaps in a namespace of the test's own.
"""

from __future__ import annotations

import asyncio
import random
import tracemalloc
from typing import Any

import pytest
from support import waiting

from sro import errors, settings
from sro.cache import projections, store
from sro.kube import discovery, http
from sro.observe import metrics
from sro.watch import reflector

pytestmark = pytest.mark.integration


async def open_api(cluster: Any, m: metrics.Metrics | None = None) -> http.Api:
    return await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig)), metrics=m)


def configmap(ns: str, name: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": {"sro.dev/owner": "t"}},
        "data": {"v": value},
    }


class Recorder:
    """Collects what the reflector delivered."""

    def __init__(self) -> None:
        self.created: set[str] = set()
        self.deleted: list[str] = []

    def __call__(self, change: store.Change[projections.ObjectView]) -> None:
        if change.old is None and change.new is not None:
            self.created.add(change.new.name)
        if change.new is None and change.old is not None:
            self.deleted.append(change.old.name)


def make_reflector(
    api: http.Api, resource: discovery.Resource, ns: str, m: metrics.Metrics, rec: Recorder
) -> reflector.Reflector[projections.ObjectView]:
    s: store.Store[projections.ObjectView] = store.Store(
        resource="configmaps", project=projections.ObjectView.from_body
    )
    return reflector.Reflector(
        api=api,
        resource=resource,
        store=s,
        on_change=rec,
        settings=settings.WatchSettings(backoff_initial=0.2, backoff_cap=2.0),
        metrics=m,
        namespace=ns,
        label_selector="sro.dev/owner",
    )


async def fresh_list(api: http.Api, resource: discovery.Resource, ns: str) -> dict[str, str]:
    listing = await api.request("GET", resource.path(namespace=ns), params={"labelSelector": "sro.dev/owner"})
    return {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in listing["items"]}


def cached(r: reflector.Reflector[projections.ObjectView]) -> dict[str, str]:
    return {v.name: v.resource_version for v in r.store.values()}


async def churn(
    api: http.Api, resource: discovery.Resource, ns: str, stop: asyncio.Event
) -> tuple[int, set[str]]:
    """Create, change and delete ConfigMaps until told to stop, riding out the restart."""
    rng = random.Random(7)
    alive: set[str] = set()
    gone: set[str] = set()
    writes = 0
    n = 0
    while not stop.is_set():
        try:
            roll = rng.random()
            if roll < 0.5 or not alive:
                n += 1
                name = f"c{n}"
                await api.request(
                    "POST", resource.path(namespace=ns), body=configmap(ns, name, "0"), retry=False
                )
                alive.add(name)
            elif roll < 0.8:
                name = rng.choice(sorted(alive))
                await api.request(
                    "PATCH",
                    resource.path(namespace=ns, name=name),
                    body={"data": {"v": str(n)}},
                    content_type=http.MERGE_PATCH,
                    retry=False,
                )
            else:
                name = rng.choice(sorted(alive))
                await api.request("DELETE", resource.path(namespace=ns, name=name), retry=False)
                alive.discard(name)
                gone.add(name)
            writes += 1
        except (errors.TransportError, errors.ServerError, errors.Conflict, errors.NotFound):
            await asyncio.sleep(0.05)  # the apiserver is restarting: try again shortly
    return writes, gone


async def test_the_cache_equals_a_fresh_list_after_the_apiserver_restarts_during_churn(
    cluster: Any, namespace: str
) -> None:
    m = metrics.Metrics()
    async with await open_api(cluster, m) as api:
        resource = await discovery.Discovery(api).resource("v1", "ConfigMap")
        rec = Recorder()
        r = make_reflector(api, resource, namespace, m, rec)
        task = asyncio.create_task(r.run())
        try:
            await asyncio.wait_for(r.synced.wait(), 30)
            stop = asyncio.Event()
            churning = asyncio.create_task(churn(api, resource, namespace, stop))
            await waiting.wait_for(lambda: len(r.store) >= 20, timeout=60, message="churn under way")
            await asyncio.to_thread(cluster.run, "restart", "apiserver")
            await waiting.wait_for(
                lambda: len(rec.created) >= 60, timeout=120, message="churn after the restart"
            )
            stop.set()
            writes, gone = await churning
            expected = await fresh_list(api, resource, namespace)
            await waiting.wait_for(
                lambda: cached(r) == expected, timeout=60, message="the cache equals a fresh list"
            )
            missed = (rec.created & gone) - set(rec.deleted)
            assert not missed, f"deletions never delivered: {sorted(missed)}"
            print(
                f"\nrestart during churn: {writes} writes, {len(gone)} deletions, "
                f"watch restarts {m.total('sro_watch_restarts_total')}, "
                f"relists {m.total('sro_watch_relists_total')}"
            )
            # The server going away ends the watch long before its 5-10 minute timeout:
            # an error, or a close counted as early, never as the routine one.
            assert (
                m.total("sro_watch_restarts_total", reason="error")
                + m.total("sro_watch_restarts_total", reason="closed_early")
                >= 1
            ), "the restart broke the stream and the reflector resumed"
            assert m.total("sro_watch_restarts_total", reason="closed") == 0
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def _create_many(
    api: http.Api, resource: discovery.Resource, ns: str, names: list[str], *, data: str
) -> None:
    limit = asyncio.Semaphore(32)

    async def one(name: str) -> None:
        async with limit:
            await api.request("POST", resource.path(namespace=ns), body=configmap(ns, name, data))

    await asyncio.gather(*(one(n) for n in names))


def paged_reflector(
    api: Any, resource: Any, s: Any, rec: Any, *, metrics: Any, namespace: str
) -> reflector.Reflector[projections.ObjectView]:
    """A reflector of labelled ConfigMaps listing 70 a page, backing off quickly."""
    return reflector.Reflector(
        api=api,
        resource=resource,
        store=s,
        on_change=rec,
        settings=settings.WatchSettings(page_size=70, backoff_initial=0.2, backoff_cap=2.0),
        metrics=metrics,
        namespace=namespace,
        label_selector="sro.dev/owner",
    )


async def test_a_paged_relist_of_many_objects_ends_equal_to_a_fresh_list(
    cluster: Any, namespace: str
) -> None:
    m = metrics.Metrics()
    async with await open_api(cluster, m) as api:
        resource = await discovery.Discovery(api).resource("v1", "ConfigMap")
        names = [f"m{i:04d}" for i in range(1000)]
        await _create_many(api, resource, namespace, names, data="0")
        rec = Recorder()
        s: store.Store[projections.ObjectView] = store.Store(
            resource="configmaps", project=projections.ObjectView.from_body
        )
        r = paged_reflector(api, resource, s, rec, metrics=m, namespace=namespace)
        gets_before = m.total("sro_api_requests_total", verb="get", resource="configmaps")
        task = asyncio.create_task(r.run())
        await asyncio.wait_for(r.synced.wait(), 60)
        assert len(r.store) == 1000
        pages = m.total("sro_api_requests_total", verb="get", resource="configmaps") - gets_before
        assert pages == 15, "1,000 objects in pages of 70"
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        # The gap: deletions, changes and creations while nothing watches, then history goes.
        for name in names[:100]:
            await api.request("DELETE", resource.path(namespace=namespace, name=name))
        for name in names[100:200]:
            await api.request(
                "PATCH",
                resource.path(namespace=namespace, name=name),
                body={"data": {"v": "1"}},
                content_type=http.MERGE_PATCH,
            )
        await _create_many(api, resource, namespace, [f"n{i:03d}" for i in range(50)], data="0")
        # A reflector that starts over on the same store lists again (what a 410 leads to;
        # the compaction test below provokes a real one), and must end equal to the list.
        r = paged_reflector(api, resource, s, rec, metrics=m, namespace=namespace)
        task = asyncio.create_task(r.run())
        try:
            expected = await fresh_list(api, resource, namespace)
            assert len(expected) == 950
            await waiting.wait_for(
                lambda: cached(r) == expected, timeout=60, message="cache equals a fresh list"
            )
            assert set(names[:100]) <= set(rec.deleted)
            assert {v.name for v in r.store.values() if v.body.get("data") == {"v": "1"}} == set(
                names[100:200]
            )
            assert m.total("sro_watch_relists_total", reason="initial") == 2
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def test_a_relist_holds_one_raw_page_at_a_time(cluster: Any, namespace: str) -> None:
    """Memory of a relist follows the page, not the list: 200 objects of 32 KiB each in
    pages of 10, kept as (name, version) pairs, never hold more than a few pages' worth."""
    m = metrics.Metrics()
    value = "x" * (32 * 1024)
    async with await open_api(cluster, m) as api:
        resource = await discovery.Discovery(api).resource("v1", "ConfigMap")
        await _create_many(api, resource, namespace, [f"big{i:03d}" for i in range(200)], data=value)
        s: store.Store[tuple[str, str]] = store.Store(
            resource="configmaps",
            project=lambda b: (str(b["metadata"]["name"]), str(b["metadata"]["resourceVersion"])),
        )
        r = reflector.Reflector(
            api=api,
            resource=resource,
            store=s,
            on_change=lambda change: None,
            settings=settings.WatchSettings(page_size=10),
            metrics=m,
            namespace=namespace,
            label_selector="sro.dev/owner",
        )
        total = 200 * len(value)
        tracemalloc.start()
        task = asyncio.create_task(r.run())
        try:
            await asyncio.wait_for(r.synced.wait(), 60)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        assert len(s) == 200
        print(f"\nrelist of {total / 2**20:.1f} MiB in pages of 10: peak {peak / 2**20:.2f} MiB traced")
        assert peak < total / 4, f"peak {peak} bytes for a list of {total} bytes"


async def test_a_compaction_forces_a_relist_that_delivers_a_deletion_made_in_the_gap(
    cluster: Any, namespace: str
) -> None:
    m = metrics.Metrics()
    async with await open_api(cluster, m) as api:
        resource = await discovery.Discovery(api).resource("v1", "ConfigMap")
        for name in ("keep", "doomed"):
            await api.request(
                "POST", resource.path(namespace=namespace), body=configmap(namespace, name, "1")
            )
        rec = Recorder()
        r = make_reflector(api, resource, namespace, m, rec)
        task = asyncio.create_task(r.run())
        await asyncio.wait_for(r.synced.wait(), 30)
        assert set(cached(r)) == {"keep", "doomed"}
        # The gap: the reflector is down while the object goes and history is compacted.
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await api.request("DELETE", resource.path(namespace=namespace, name="doomed"))
        await api.request("POST", resource.path(namespace=namespace), body=configmap(namespace, "born", "1"))
        await asyncio.to_thread(cluster.compact)
        task = asyncio.create_task(r.run())  # resumes from its last version, which is gone now
        try:
            await waiting.wait_for(lambda: "doomed" in rec.deleted, timeout=60, message="the gap's deletion")
            assert (
                m.total("sro_watch_relists_total", reason="expired")
                + m.total("sro_watch_relists_total", reason="expired_again")
                >= 1
            )
            assert m.total("sro_watch_restarts_total", reason="expired") >= 1
            expected = await fresh_list(api, resource, namespace)
            await waiting.wait_for(
                lambda: cached(r) == expected, timeout=30, message="cache equals a fresh list"
            )
            assert set(expected) == {"keep", "born"}
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
