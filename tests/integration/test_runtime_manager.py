"""A manager against the real API server: its watches, its health and metrics servers,
and a clean stop.

Covers: a manager skips an owned kind that is not served, starts a watch for a kind at
runtime (only labelled objects cached, their owner enqueued), serves /healthz, /readyz
and /metrics (each server only its own paths), and shuts down cleanly, releasing its
Lease; a kind whose list the server refuses is reported at once, never waited on, and
the manager stays ready.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import aiohttp
import pytest
from runtime_api_common import api_settings, crd
from support import waiting

from sro import errors, settings
from sro.runtime import result
from sro.runtime.manager import Manager

pytestmark = pytest.mark.integration


async def test_a_manager_watches_a_kind_at_runtime_serves_health_and_stops_cleanly(
    cluster: Any, namespace: str
) -> None:
    m = Manager(
        settings.Settings(
            api=api_settings(cluster),
            server=settings.ServerSettings(port=0, metrics_port=0),
            lease=settings.LeaseSettings(namespace=namespace, name="api-test", retry_period=0.5),
        )
    )
    m.watch_primary("v1", "ConfigMap", namespace=namespace)
    m.watch_owned("absent.sro.dev/v1", "Thing")  # not served: skipped, not fatal
    seen: list[str] = []

    async def reconcile(key: str) -> result.Result:
        seen.append(key)
        return result.DONE

    m.reconcile_with(reconcile)
    running = asyncio.create_task(m.run())
    try:
        await waiting.wait_for(lambda: m.role == "leader", timeout=60, message="leading")
        assert m.health is not None and m.metrics_server is not None
        probes = f"http://127.0.0.1:{m.health.port}"
        scraped = f"http://127.0.0.1:{m.metrics_server.port}"
        async with aiohttp.ClientSession() as web:
            for url, expected in (
                (probes + "/healthz", "ok"),
                (probes + "/readyz", "leader"),
                (scraped + "/metrics", "sro_leader 1.0"),
                (scraped + "/metrics", 'leader_election_master_status{name="api-test"} 1.0'),
                (scraped + "/metrics", 'rest_client_requests_total{code="200",host="'),
            ):
                async with web.get(url) as resp:
                    assert resp.status == 200 and expected in await resp.text(), url
            for url in (probes + "/metrics", scraped + "/healthz"):  # each server serves its own
                async with web.get(url) as resp:
                    assert resp.status == 404, url
        secrets = await m.ensure_watch("v1", "Secret")
        assert m.has_synced and len(secrets) == 0, "only labelled secrets are cached"
        cluster.kubectl("create", "secret", "generic", "mine", "-n", namespace, "--from-literal=a=b")
        cluster.kubectl("label", "secret", "mine", "-n", namespace, "sro.dev/owner=somebody")
        await waiting.wait_for(
            lambda: secrets.find("mine", namespace=namespace) is not None, timeout=30, message="runtime watch"
        )
        assert [v.name for v in m.owned("somebody")] == ["mine"]
        await waiting.wait_for(lambda: f"{namespace}/somebody" in seen, timeout=30, message="owner enqueued")
    finally:
        m.stop()
        assert await asyncio.wait_for(running, 30) == 0
    lease = cluster.kubectl_json("get", "lease", "api-test", "-n", namespace)
    assert not lease["spec"].get("holderIdentity"), "the lease was released"
    assert m.metrics.value("sro_leader") == 0


async def test_a_kind_whose_list_the_server_refuses_is_reported_at_once_never_waited_on(
    cluster: Any, namespace: str
) -> None:
    group = f"t{uuid.uuid4().hex[:8]}.runtime.sro.dev"
    cluster.kubectl("apply", "-f", "-", input=json.dumps(crd(group)))
    m = Manager(
        settings.Settings(
            api=api_settings(cluster),
            server=settings.ServerSettings(port=0),
            lease=settings.LeaseSettings(enabled=False),
        )
    )
    m.watch_primary("v1", "ConfigMap", namespace=namespace)

    async def reconcile(key: str) -> result.Result:
        return result.DONE

    m.reconcile_with(reconcile)
    running = asyncio.create_task(m.run())
    try:
        await waiting.wait_for(lambda: m.role == "leader", timeout=60, message="working")

        async def served() -> bool:
            await m.discovery.read()
            return m.is_served(f"{group}/v1", "Widget")

        await waiting.wait_for(served, timeout=60, message="discovery sees the CRD")
        cluster.kubectl("delete", "crd", f"widgets.{group}")
        for attempt in range(2):  # and again: a refused kind is never left half-registered
            started = asyncio.get_running_loop().time()
            with pytest.raises(errors.NotFound):
                await asyncio.wait_for(m.ensure_watch(f"{group}/v1", "Widget"), 20)
            assert asyncio.get_running_loop().time() - started < 10, attempt
        assert m.ready()[0], "the manager stays ready"
    finally:
        m.stop()
        assert await asyncio.wait_for(running, 30) == 0
