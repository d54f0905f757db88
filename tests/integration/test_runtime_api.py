"""API access and writes against the real API server: typed errors, discovery, apply, status, delete.

Covers: a missing object is ``NotFound``; creating an existing one is ``Conflict``; an
invalid object is refused by a server-side dry run with field causes and nothing is
written; a CRD installed after discovery started is found on first use; status is
applied through the status subresource; deletes honour the propagation policy; a
manager skips an owned kind that is not served, starts a watch for a kind at runtime,
serves /healthz, /readyz and /metrics, and shuts down cleanly.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import aiohttp
import pytest
from support import waiting

from sro import errors, settings
from sro.apply import ssa
from sro.engine import node_writes
from sro.kube import discovery, http
from sro.model import desired, views
from sro.plan import lifecycle, node_patches
from sro.runtime import result
from sro.runtime.manager import Manager

pytestmark = pytest.mark.integration


def api_settings(cluster: Any) -> settings.ApiSettings:
    return settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))


def crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"size": {"type": "integer", "minimum": 1}},
                                },
                                "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                            },
                        }
                    },
                }
            ],
        },
    }


async def test_answers_become_typed_errors(cluster: Any, namespace: str) -> None:
    async with await http.Api.connect(api_settings(cluster)) as api:
        d = discovery.Discovery(api)
        writer = ssa.Writer(api=api, discovery=d)
        missing = desired.ObjectRef(api_version="v1", kind="ConfigMap", namespace=namespace, name="nope")
        with pytest.raises(errors.NotFound):
            await writer.get(missing)
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": namespace}}
        path = (await d.resource("v1", "ConfigMap")).path(namespace=namespace)
        await api.request("POST", path, body=body)
        with pytest.raises(errors.Conflict) as conflict:
            await api.request("POST", path, body=body)
        assert conflict.value.reason == "AlreadyExists"
        assert not await writer.delete(missing), "deleting a missing object is not an error"


async def test_a_node_patch_answers_with_the_nodes_metadata_only(cluster: Any) -> None:
    """What a label patch returns is what ``node_writes`` reads (labels, resourceVersion),
    without the node's spec and status."""
    async with await http.Api.connect(api_settings(cluster)) as api:
        writer = ssa.Writer(api=api, discovery=discovery.Discovery(api))
        listed = await api.request("GET", "/api/v1/nodes", params={"limit": "1"})
        name = listed["items"][0]["metadata"]["name"]
        key = f"test.sro.dev/patched-{uuid.uuid4().hex[:8]}"
        try:
            answer = await writer.patch_node(name, {"metadata": {"labels": {key: "yes"}}})
            assert answer["kind"] == "PartialObjectMetadata"
            assert "status" not in answer and "spec" not in answer
            assert answer["metadata"]["name"] == name and answer["metadata"]["labels"][key] == "yes"
            assert writer.written_version("v1", "Node") == int(answer["metadata"]["resourceVersion"])
        finally:
            removed = await writer.patch_node(name, {"metadata": {"labels": {key: None}}})
        assert key not in removed["metadata"]["labels"]


async def test_a_dry_run_refuses_an_invalid_object_with_causes_and_writes_nothing(
    cluster: Any, namespace: str
) -> None:
    async with await http.Api.connect(api_settings(cluster)) as api:
        writer = ssa.Writer(api=api, discovery=discovery.Discovery(api))
        bad = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "bad", "namespace": namespace},
            "spec": {"replicas": -1, "selector": {"matchLabels": {"a": "b"}}, "template": {}},
        }
        with pytest.raises(errors.Invalid) as invalid:
            await writer.apply(bad, dry_run=True)
        assert any(c.field.startswith("spec.") for c in invalid.value.causes)
        good = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry", "namespace": namespace}}
        answer = await writer.apply(good, dry_run=True)
        assert answer["metadata"]["name"] == "dry"
        ref = desired.ObjectRef.of(good)
        with pytest.raises(errors.NotFound):
            await writer.get(ref)


async def test_a_crd_installed_later_is_discovered_and_its_status_is_applied(
    cluster: Any, namespace: str
) -> None:
    group = f"t{uuid.uuid4().hex[:8]}.runtime.sro.dev"
    async with await http.Api.connect(api_settings(cluster)) as api:
        d = discovery.Discovery(api)
        writer = ssa.Writer(api=api, discovery=d)
        assert not await d.is_served(f"{group}/v1", "Widget")
        await writer.apply(crd(group))
        try:
            await waiting.wait_for(
                lambda: d.is_served(f"{group}/v1", "Widget"), timeout=60, message="the new kind is served"
            )
            widget = {
                "apiVersion": f"{group}/v1",
                "kind": "Widget",
                "metadata": {"name": "w", "namespace": namespace},
                "spec": {"size": 2},
            }
            created = await writer.apply(widget)
            assert created["metadata"]["annotations"]["sro.dev/applied-hash"]
            again = await writer.apply(widget)
            assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
            ref = desired.ObjectRef.of(widget)
            await writer.apply_status(ref, {"phase": "Ready"})
            assert (await writer.get(ref))["status"] == {"phase": "Ready"}
            await writer.apply_status(ref, {"phase": "Done"})
            assert (await writer.get(ref))["status"]["phase"] == "Done"
            assert (await writer.get(ref))["spec"] == {"size": 2}, "a status write leaves the spec alone"
        finally:
            await writer.delete(
                desired.ObjectRef(
                    api_version="apiextensions.k8s.io/v1",
                    kind="CustomResourceDefinition",
                    namespace="",
                    name=f"widgets.{group}",
                )
            )


async def test_foreground_deletion_waits_for_dependents(cluster: Any, namespace: str) -> None:
    async with await http.Api.connect(api_settings(cluster)) as api:
        writer = ssa.Writer(api=api, discovery=discovery.Discovery(api))
        owner = await writer.apply(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "namespace": namespace}}
        )
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
        await writer.apply(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "child", "namespace": namespace, "ownerReferences": [ref]},
            }
        )
        owner_ref = desired.ObjectRef.of(owner)
        assert await writer.delete(owner_ref, propagation="Foreground")
        child = desired.ObjectRef(api_version="v1", kind="ConfigMap", namespace=namespace, name="child")

        async def both_gone() -> bool:
            for r in (owner_ref, child):
                try:
                    await writer.get(r)
                    return False
                except errors.NotFound:
                    pass
            return True

        await waiting.wait_for(both_gone, timeout=60, message="owner and dependent deleted")
        with pytest.raises(ValueError):
            await writer.delete(owner_ref, propagation="Sideways")


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


async def test_a_write_fenced_while_it_waits_for_the_rate_limit_is_never_sent(
    cluster: Any, namespace: str
) -> None:
    # One request every two seconds: the second waits in the client's own rate limit, and
    # the lease is lost (the fence closes) during that wait, after the attempt began.
    slow = settings.ApiSettings(kubeconfig=str(cluster.kubeconfig), qps=0.5, burst=1)
    fenced = False

    def guard() -> None:
        if fenced:
            raise errors.NotLeader("refused: the lease is gone")

    def lose_lease() -> None:
        nonlocal fenced
        fenced = True

    async with await http.Api.connect(slow) as api:
        path = (await discovery.Discovery(api).resource("v1", "ConfigMap")).path(namespace=namespace)
        await api.request("GET", path)  # takes the one token of the burst
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late", "namespace": namespace}}
        write = asyncio.ensure_future(api.request("POST", path, body=body, retry=False, guard=guard))
        asyncio.get_running_loop().call_later(1.0, lose_lease)  # mid-way through the 2 s wait
        with pytest.raises(errors.NotLeader):
            await write
        assert fenced
        with pytest.raises(errors.NotFound):
            await api.request("GET", f"{path}/late")


async def test_a_taint_patch_that_meets_a_status_report_is_built_again_and_a_cordon_is_not(
    cluster: Any,
) -> None:
    """A node seen a moment ago has changed since (a kubelet's status report, an
    administrator's taint): sro's taint patch, guarded by the resourceVersion it saw, meets
    a conflict, is built again from a fresh read and goes through, keeping the other
    taint; a cordon built from the same stale view is reported, not retried."""
    async with await http.Api.connect(api_settings(cluster)) as api:
        writer = ssa.Writer(api=api, discovery=discovery.Discovery(api))
        listed = await api.request("GET", "/api/v1/nodes", params={"limit": "1"})
        name = listed["items"][0]["metadata"]["name"]
        stale = views.NodeView.from_body(await api.request("GET", f"/api/v1/nodes/{name}"))
        theirs = {"key": f"admin.example.com/{uuid.uuid4().hex[:8]}", "effect": "NoSchedule"}
        ours = views.Taint(key="test.sro.dev/gpu", value="present", effect="NoSchedule")
        await api.request(  # meanwhile, someone else's write moves the resourceVersion
            "PATCH",
            f"/api/v1/nodes/{name}",
            body={"spec": {"taints": [*(t.to_body() for t in stale.taints), theirs]}},
            content_type=http.MERGE_PATCH,
        )
        try:
            done = await node_writes.carry_out(
                writer,
                [node_patches.NodeChange(node=name, taints=(ours,))],
                sr_name="conflicted",
                nodes=[stale],
            )
            assert done.failures == ()
            now = await api.request("GET", f"/api/v1/nodes/{name}")
            keys = [t["key"] for t in now["spec"].get("taints") or []]
            assert ours.key in keys and theirs["key"] in keys, "sro's taint added, theirs kept"
            assert ours.key in now["metadata"]["annotations"][node_patches.taints_annotation("conflicted")]

            cordon = await node_writes.carry_out(
                writer,
                [node_patches.NodeChange(node=name, unschedulable=True)],
                sr_name="conflicted",
                nodes=[stale],
            )
            assert [n for n, _ in cordon.failures] == [name]
            assert isinstance(cordon.failures[0][1], errors.Conflict)
            assert not (await api.request("GET", f"/api/v1/nodes/{name}"))["spec"].get("unschedulable")
        finally:
            fresh = views.NodeView.from_body(await api.request("GET", f"/api/v1/nodes/{name}"))
            await writer.patch_node(
                name,
                {
                    "metadata": {
                        "resourceVersion": fresh.resource_version,
                        "annotations": {node_patches.taints_annotation("conflicted"): None},
                    },
                    "spec": {
                        "taints": [
                            t.to_body() for t in fresh.taints if t.key not in (ours.key, theirs["key"])
                        ]
                    },
                },
            )


async def test_what_waits_on_a_nodes_labels_runs_once_that_node_shows_them_not_after_every_node(
    cluster: Any,
) -> None:
    """``carry_out(then=...)``: each node's follow-up runs as soon as its own patch answered,
    with the labels the answer shows, before the next node's patch (one at a time here);
    a node that needed no patch is followed up with its cached labels, and a node that is
    gone is not followed up at all."""
    async with await http.Api.connect(api_settings(cluster)) as api:
        writer = ssa.Writer(api=api, discovery=discovery.Discovery(api))
        listed = await api.request("GET", "/api/v1/nodes", params={"limit": "3"})
        names = sorted(item["metadata"]["name"] for item in listed["items"])
        assert len(names) == 3
        sr = f"follow-{uuid.uuid4().hex[:6]}"
        label = lifecycle.state_label(sr, "state-a")
        seen = {n: views.NodeView.from_body(await api.request("GET", f"/api/v1/nodes/{n}")) for n in names}
        done_already = names[2]
        await api.request(
            "PATCH", f"/api/v1/nodes/{done_already}", body={"metadata": {"labels": {label: "ready"}}},
            content_type=http.MERGE_PATCH,
        )  # fmt: skip
        seen[done_already] = views.NodeView.from_body(
            await api.request("GET", f"/api/v1/nodes/{done_already}")
        )
        followed: list[tuple[str, str | None, str | None]] = []

        async def then(node: str, labels: Any) -> None:
            later = [n for n in names[:2] if n > node]
            other = (await api.request("GET", f"/api/v1/nodes/{later[0]}"))["metadata"] if later else {}
            followed.append(
                (node, labels.get(label), (other.get("labels") or {}).get(label) if later else None)
            )

        changes = [node_patches.NodeChange(node=n, labels={label: "ready"}) for n in (*names, "no-such-node")]
        try:
            written = await node_writes.carry_out(
                writer, changes, sr_name=sr, nodes=[*seen.values()], limit=1, then=then
            )
            assert written.failures == ()
            assert sorted(n for n, _, _ in followed) == names, "every node shown once, the gone one never"
            assert all(value == "ready" for _, value, _ in followed), "each with the labels it shows"
            first = next(f for f in followed if f[0] == names[0])
            assert first[2] is None, "followed up before the next node's patch was sent"
        finally:
            for n in names:
                await api.request(
                    "PATCH", f"/api/v1/nodes/{n}", body={"metadata": {"labels": {label: None}}},
                    content_type=http.MERGE_PATCH,
                )  # fmt: skip


async def test_concurrent_applies_each_get_their_own_answer_or_refusal(cluster: Any, namespace: str) -> None:
    """Forty applies at once, every other one refused (a field the schema does not
    declare, named after its object): each valid one is answered with its own object and
    each refused one raises the refusal of its own field, never another apply's. A
    retrying object shared by concurrent applies once handed one apply's refusal to
    another (a Deployment's dry run reported a NetworkPolicy's 403)."""
    async with await http.Api.connect(api_settings(cluster)) as api:
        writer = ssa.Writer(api=api, discovery=discovery.Discovery(api))

        def body(i: int) -> dict[str, Any]:
            data: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap"}
            data["metadata"] = {"name": f"crowd-{i}", "namespace": namespace}
            data["data" if i % 2 == 0 else f"datta{i}"] = {"k": str(i)}
            return data

        results = await asyncio.gather(
            *(writer.apply(body(i), dry_run=True) for i in range(40)), return_exceptions=True
        )
        for i, got in enumerate(results):
            if i % 2 == 0:
                assert isinstance(got, dict), f"crowd-{i}: {got!r}"
                assert got["metadata"]["name"] == f"crowd-{i}" and got["data"] == {"k": str(i)}
            else:
                assert isinstance(got, errors.ApiError), f"crowd-{i}: {got!r}"
                assert f"datta{i}" in str(got) and not any(
                    f"datta{j}:" in str(got) for j in range(1, 40, 2) if j != i
                ), f"crowd-{i}: {got}"
