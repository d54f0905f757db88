"""429 Too Many Requests from the real API server's Priority and Fairness, and what sro does.

A ServiceAccount of the test's own is put in a priority level with one concurrency share
that rejects what it cannot run at once (a FlowSchema matching only that account); sro,
running as that account, then floods the server. Covers: every request completes,
after real 429s, and each retry waited at least the server's Retry-After; a POST, which
sro otherwise sends once, is retried after a 429 (the server refused it before doing
anything) and the audit log shows exactly one successful create per object; reflectors
started during the flood sync, their watches included, waiting out each Retry-After; a
fenced write refused with 429 is not sent again once the lease is gone.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from simcluster import audit
from support import waiting

from sro import errors, settings
from sro.apply import ssa
from sro.cache import projections, store
from sro.kube import discovery, http
from sro.observe import metrics
from sro.watch import reflector

pytestmark = pytest.mark.integration

SA = "flood"


@dataclass(frozen=True)
class Throttled:
    kubeconfig: Path
    namespace: str
    user: str


class RecordingApi(http.Api):
    """The real client, noting each wait the server asked for next to what it asked."""

    waits: list[tuple[float, float]]

    def throttled(self, exc: BaseException, *, resource: str, delay: float) -> None:
        if isinstance(exc, errors.ApiError) and exc.retry_after is not None:
            self.waits.append((exc.retry_after, delay))
        super().throttled(exc, resource=resource, delay=delay)


async def connect(t: Throttled, m: metrics.Metrics) -> RecordingApi:
    api = await RecordingApi.connect(
        settings.ApiSettings(kubeconfig=str(t.kubeconfig), retries=30), metrics=m
    )
    assert isinstance(api, RecordingApi)
    api.waits = []
    return api


def _flow_schema_in_effect(server: str, token: str, ca: str, namespace: str, uid: str) -> bool:
    """APF names the FlowSchema that classified a request in a response header."""
    request = urllib.request.Request(
        f"{server}/api/v1/namespaces/{namespace}/configmaps?limit=1",
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, context=ssl.create_default_context(cafile=ca), timeout=5) as resp:
        return bool(resp.headers.get("X-Kubernetes-PF-FlowSchema-UID") == uid)


@pytest.fixture
def throttled(cluster: Any, namespace: str, tmp_path: Path) -> Iterator[Throttled]:
    """A ServiceAccount that may edit the test namespace, in a priority level of one share."""
    name = f"sro-test-{namespace}"
    cluster.kubectl("create", "serviceaccount", SA, "-n", namespace)
    cluster.kubectl(
        "create",
        "rolebinding",
        SA,
        "--clusterrole=edit",
        f"--serviceaccount={namespace}:{SA}",
        "-n",
        namespace,
    )
    cluster.apply(
        [
            {
                "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                "kind": "PriorityLevelConfiguration",
                "metadata": {"name": name},
                "spec": {
                    "type": "Limited",
                    "limited": {
                        "nominalConcurrencyShares": 1,
                        "lendablePercent": 0,
                        "borrowingLimitPercent": 0,
                        "limitResponse": {"type": "Reject"},
                    },
                },
            },
            {
                "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                "kind": "FlowSchema",
                "metadata": {"name": name},
                "spec": {
                    "priorityLevelConfiguration": {"name": name},
                    "matchingPrecedence": 500,
                    "distinguisherMethod": {"type": "ByUser"},
                    "rules": [
                        {
                            "subjects": [
                                {
                                    "kind": "ServiceAccount",
                                    "serviceAccount": {"name": SA, "namespace": namespace},
                                }
                            ],
                            "resourceRules": [
                                {
                                    "verbs": ["*"],
                                    "apiGroups": ["*"],
                                    "resources": ["*"],
                                    "namespaces": ["*"],
                                    "clusterScope": True,
                                }
                            ],
                            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                        }
                    ],
                },
            },
        ]
    )
    try:
        token = cluster.kubectl("create", "token", SA, "-n", namespace, "--duration=1h").stdout.strip()
        config = yaml.safe_load(cluster.kubeconfig.read_text())
        config["users"] = [{"name": SA, "user": {"token": token}}]
        config["contexts"][0]["context"]["user"] = SA
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(config))
        uid = cluster.kubectl_json("get", "flowschema", name)["metadata"]["uid"]
        cluster_config = config["clusters"][0]["cluster"]
        waiting.wait_for_sync(
            lambda: _flow_schema_in_effect(
                cluster_config["server"], token, cluster_config["certificate-authority"], namespace, uid
            ),
            timeout=30,
            message="the test FlowSchema classifies the account's requests",
        )
        yield Throttled(
            kubeconfig=kubeconfig, namespace=namespace, user=f"system:serviceaccount:{namespace}:{SA}"
        )
    finally:
        cluster.kubectl("delete", "flowschema", name, "--ignore-not-found", check=False)
        cluster.kubectl("delete", "prioritylevelconfiguration", name, "--ignore-not-found", check=False)


def assert_waited_out(api: RecordingApi, m: metrics.Metrics) -> None:
    assert api.waits, "the flood met no 429"
    assert all(after >= 1 for after, _ in api.waits), "API Priority and Fairness asks for a second or more"
    short = [(after, delay) for after, delay in api.waits if delay < after]
    assert not short, f"retried sooner than Retry-After: {short[:5]}"
    assert m.total("sro_api_throttled_total", code="429") == len(api.waits)
    assert m.total("sro_api_throttled_seconds_total") >= len(api.waits)


async def test_a_flood_of_reads_completes_after_each_retry_after(throttled: Throttled) -> None:
    m = metrics.Metrics()
    async with await connect(throttled, m) as api:
        path = f"/api/v1/namespaces/{throttled.namespace}/configmaps"
        answers = await asyncio.gather(*(api.request("GET", path, resource="configmaps") for _ in range(100)))
    assert len(answers) == 100 and all("items" in a for a in answers)
    rejected = m.total("sro_api_requests_total", verb="get", code="429")
    print(f"\n100 concurrent GETs: {rejected:.0f} answered 429, waits {sorted({d for _, d in api.waits})}")
    assert rejected >= 1
    assert m.total("sro_api_requests_total", verb="get", code="200") == 100
    assert_waited_out(api, m)


async def test_a_create_refused_with_429_is_sent_again_and_done_once(
    cluster: Any, throttled: Throttled
) -> None:
    m = metrics.Metrics()
    names = [f"made-{i:02d}" for i in range(60)]
    path = f"/api/v1/namespaces/{throttled.namespace}/configmaps"
    async with await connect(throttled, m) as api:
        await asyncio.gather(
            *(
                api.request(
                    "POST",
                    path,
                    body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n}},
                    resource="configmaps",
                    retry=False,
                )
                for n in names
            )
        )
    assert m.total("sro_api_requests_total", verb="post", code="429") >= 1
    assert m.total("sro_api_requests_total", verb="post", code="201") == 60
    assert_waited_out(api, m)

    def creates() -> list[audit.Write]:
        writes = audit.matching(
            audit.by_user(audit.read(cluster.audit_log), throttled.user),
            verb="create",
            resource="configmaps",
            namespace=throttled.namespace,
        )
        return writes if len([w for w in writes if w.code == 201]) == 60 else []

    writes = waiting.wait_for_sync(creates, timeout=10, message="60 successful creates in the audit log")
    done = audit.count_by([w for w in writes if w.code == 201], key=lambda w: w.name)
    assert done == dict.fromkeys(names, 1)
    assert any(w.code == 429 for w in writes), "the refusals are in the audit log too"


async def test_reflectors_started_in_a_flood_sync_after_their_watches_wait_out_retry_after(
    throttled: Throttled,
) -> None:
    m = metrics.Metrics()
    # The flood: requests that are never retried, so the priority level stays full.
    flooder = await http.Api.connect(settings.ApiSettings(kubeconfig=str(throttled.kubeconfig), retries=1))
    async with await connect(throttled, m) as api, flooder:
        resource = await discovery.Discovery(api).resource("v1", "ConfigMap")
        stop = asyncio.Event()

        # Lists of a few MiB keep the level's seats busy, not just for a millisecond.
        big = "x" * (256 * 1024)
        await asyncio.gather(
            *(
                api.request(
                    "POST",
                    resource.path(namespace=throttled.namespace),
                    body={
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": f"big-{i}"},
                        "data": {"v": big},
                    },
                    resource="configmaps",
                )
                for i in range(16)
            )
        )

        async def flood() -> None:
            path = resource.path(namespace=throttled.namespace)
            while not stop.is_set():
                await asyncio.gather(
                    *(flooder.request("GET", path, resource="flood") for _ in range(10)),
                    return_exceptions=True,
                )

        reflectors = [
            reflector.Reflector(
                api=api,
                resource=resource,
                store=store.Store(resource="configmaps", project=projections.ObjectView.from_body),
                on_change=lambda change: None,
                # Watches the server ends every second: each reflector watches again and
                # again while the flood goes on, so a watch meets a 429 whatever the timing
                # of the first list and watch.
                settings=settings.WatchSettings(
                    backoff_initial=0.05,
                    backoff_cap=0.2,
                    server_timeout_min=1,
                    server_timeout_max=1,
                    min_watch_duration=0.0,
                ),
                metrics=m,
                namespace=throttled.namespace,
            )
            for _ in range(20)
        ]
        flooding = [asyncio.create_task(flood()) for _ in range(2)]
        tasks = [asyncio.create_task(r.run()) for r in reflectors]
        try:
            # The server lengthens its Retry-After while rejections go on (up to 32 s):
            # the flood stops once watches have met it, and every reflector must then get
            # through, no sooner than the server said.
            await waiting.wait_for(
                lambda: m.total("sro_api_requests_total", verb="watch", code="429") >= 1,
                timeout=120,
                message="a watch answered 429",
            )
            stop.set()
            await waiting.wait_for(
                lambda: all(r.has_synced for r in reflectors), timeout=120, message="every reflector synced"
            )
            await waiting.wait_for(
                lambda: m.total("sro_api_requests_total", verb="watch", code="200") >= 20,
                timeout=120,
                message="every reflector watching",
            )
        finally:
            stop.set()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, *flooding, return_exceptions=True)
        watch_429 = m.total("sro_api_requests_total", verb="watch", code="429")
        print(f"\n20 reflectors in a flood: {watch_429:.0f} watches answered 429")
        assert watch_429 >= 1, "no watch met a 429"
        assert_waited_out(api, m)


async def test_a_write_waiting_out_a_429_is_not_sent_again_once_the_lease_is_gone(
    throttled: Throttled,
) -> None:
    """The fence is asked before every attempt: the lease is taken to be lost at the first
    429, so no write refused then goes out again, and none starts after. Each write has a
    writer of its own whose fence counts its "yes" answers: one before the write, one per
    attempt sent."""
    m = metrics.Metrics()
    names = [f"fenced-{i:02d}" for i in range(60)]
    allowed: dict[str, int] = dict.fromkeys(names, 0)
    async with await connect(throttled, m) as api:
        d = discovery.Discovery(api)
        # Discovery first, alone: the 429s that count are those of the writes, not of
        # sixty discovery reads racing each other (which once took every 429 there was).
        await d.resource("v1", "ConfigMap")
        api.waits.clear()

        def fence(name: str) -> Callable[[], bool]:
            def leads() -> bool:
                if api.waits:  # the first 429 ends the lease
                    return False
                allowed[name] += 1
                return True

            return leads

        results = await asyncio.gather(
            *(
                ssa.Writer(api=api, discovery=d, fence=fence(n)).create(
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": n, "namespace": throttled.namespace},
                    }
                )
                for n in names
            ),
            return_exceptions=True,
        )
    outcome = dict(zip(names, results, strict=True))
    unexpected = {n: r for n, r in outcome.items() if not isinstance(r, dict | errors.NotLeader)}
    assert not unexpected
    sent = {n: max(0, count - 1) for n, count in allowed.items()}
    posts = m.total("sro_api_requests_total", verb="post")
    assert sum(sent.values()) == posts, "every attempt went out through the fence"
    assert max(sent.values()) == 1, "a write refused with 429 went out again"
    refused_then_fenced = [n for n, r in outcome.items() if isinstance(r, errors.NotLeader) and sent[n] == 1]
    assert refused_then_fenced, "no write met a 429 and then the fence"
    assert m.total("sro_api_requests_total", verb="post", code="429") == len(refused_then_fenced)
    assert all(sent[n] == 1 for n, r in outcome.items() if isinstance(r, dict))
