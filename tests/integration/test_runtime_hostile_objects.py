"""Objects that once ended the process, through a real reflector on the real API server.

Covers: a SpecialResource whose ``spec.set`` nests 1,100 levels (Python's ``json`` raises
``RecursionError`` on it) is listed and watched like any other, cut below
``decode.MAX_DEPTH``, and objects around it keep flowing; a labelled ConfigMap of almost
1 MiB on one line (past aiohttp's own line limit) arrives whole; the reflector never
stops and no watch restart is counted as a crash; a handler that raises on one object is
logged and counted, and the objects after it are delivered.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import waiting

from sro import settings
from sro.cache import projections, store
from sro.kube import discovery, http
from sro.observe import metrics
from sro.watch import decode, reflector

pytestmark = pytest.mark.integration

CRD = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "sro.dev_specialresources.yaml"


def nested(depth: int) -> str:
    """JSON text nested ``depth`` levels (``json.dumps`` itself cannot write it)."""
    return '{"a":' * depth + "1" + "}" * depth


def watch(
    api: http.Api,
    resource: discovery.Resource,
    m: metrics.Metrics,
    *,
    namespace: str = "",
    on_change: Callable[[store.Change[projections.ObjectView]], None] = lambda change: None,
) -> reflector.Reflector[Any]:
    s: store.Store[projections.ObjectView] = store.Store(
        resource=resource.plural, project=projections.ObjectView.from_body
    )
    return reflector.Reflector(
        api=api,
        resource=resource,
        store=s,
        on_change=on_change,
        settings=settings.WatchSettings(backoff_initial=0.2, backoff_cap=2.0),
        metrics=m,
        namespace=namespace,
    )


async def test_a_specialresource_nested_1100_deep_is_cached_cut_and_the_others_flow(cluster: Any) -> None:
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD))
    cluster.kubectl("wait", "--for=condition=Established", "crd/specialresources.sro.dev", "--timeout=60s")
    deep, plain = f"deep-{uuid.uuid4().hex[:6]}", f"plain-{uuid.uuid4().hex[:6]}"
    head = {"apiVersion": "sro.dev/v1alpha1", "kind": "SpecialResource", "metadata": {"name": deep}}
    text = json.dumps(head)[:-1] + ', "spec": {"recipe": "simple-kmod", "set": ' + nested(1100) + "}}"
    created = cluster.kubectl("create", "-f", "-", input=text, check=False)
    if created.returncode != 0:
        pytest.fail(f"the API server refused a 1,100-deep object: {created.stderr[:300]}")
    try:
        async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:
            resource = await discovery.Discovery(api).resource("sro.dev/v1alpha1", "SpecialResource")
            m = metrics.Metrics()
            r = watch(api, resource, m)
            task = asyncio.create_task(r.run())
            try:
                await asyncio.wait_for(r.synced.wait(), 60)
                cached = r.store.find(deep)
                assert cached is not None, "listed despite its depth"
                level, value = 0, cached.body["spec"]["set"]
                while isinstance(value, dict):
                    value, level = value["a"], level + 1
                assert value == decode.TOO_DEEP and level < decode.MAX_DEPTH
                other = {**head, "metadata": {"name": plain}, "spec": {"recipe": "simple-kmod"}}
                cluster.kubectl("create", "-f", "-", input=json.dumps(other))
                await waiting.wait_for(lambda: r.store.find(plain) is not None, timeout=30, message="watched")
                patch = json.dumps({"metadata": {"labels": {"touched": "yes"}}})
                cluster.kubectl("patch", "sr", deep, "--type=merge", "-p", patch)
                await waiting.wait_for(
                    lambda: (r.store.find(deep) or cached).labels.get("touched") == "yes",
                    timeout=30,
                    message="a watch event of the deep object",
                )
                assert not task.done(), "the reflector is still running"
                assert m.total("sro_watch_restarts_total", reason="crashed") == 0
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
    finally:
        cluster.kubectl("delete", "sr", deep, plain, "--wait=false", check=False)


async def test_a_labelled_configmap_of_almost_a_mebibyte_on_one_line_arrives_whole(
    cluster: Any, namespace: str
) -> None:
    async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:
        resource = await discovery.Discovery(api).resource("v1", "ConfigMap")
        r = watch(api, resource, metrics.Metrics(), namespace=namespace)
        task = asyncio.create_task(r.run())
        try:
            await asyncio.wait_for(r.synced.wait(), 60)
            big = "x" * (900 * 1024)
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"v": big}}
            cluster.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(body))
            await waiting.wait_for(
                lambda: r.store.find("big", namespace=namespace) is not None, timeout=30, message="watched"
            )
            assert r.store.get("big", namespace=namespace).body["data"]["v"] == big
            assert not task.done()
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def test_a_handler_that_raises_on_one_object_is_counted_and_the_stream_goes_on(
    cluster: Any, namespace: str
) -> None:
    delivered: list[str] = []

    def handler(change: store.Change[projections.ObjectView]) -> None:
        obj = change.new or change.old
        assert obj is not None
        if obj.name == "boom":
            raise KeyError("a handler bug")
        delivered.append(obj.name)

    m = metrics.Metrics()
    async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:
        resource = await discovery.Discovery(api).resource("v1", "ConfigMap")
        r = watch(api, resource, m, namespace=namespace, on_change=handler)
        task = asyncio.create_task(r.run())
        try:
            await asyncio.wait_for(r.synced.wait(), 60)
            for name in ("boom", "after"):
                body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
                cluster.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(body))
            await waiting.wait_for(
                lambda: "after" in delivered, timeout=30, message="the next object delivered"
            )
            failed = m.registry.get_sample_value("sro_watch_handler_errors_total", {"resource": r.name})
            assert failed == 1
            assert r.store.find("boom", namespace=namespace) is not None  # cached all the same
            assert not task.done()
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
