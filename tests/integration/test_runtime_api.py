"""API access and writes against the real API server: typed errors, discovery, apply, status, delete.

Covers: a missing object is ``NotFound``; creating an existing one is ``Conflict``; an
invalid object is refused by a server-side dry run with field causes and nothing is
written, and a valid one answers whole; a real apply and a status apply answer with the
object's metadata only; a CRD installed after discovery started is found on first use; status is
applied through the status subresource; deletes honour the propagation policy; a write
fenced while it waits for the client's rate limit is never sent; concurrent applies each
get their own answer or refusal. Writes to nodes are ``test_runtime_node_writes``'s
subject, a manager's watches and servers ``test_runtime_manager``'s.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from runtime_api_common import api_settings, crd
from support import waiting

from sro import errors, settings
from sro.apply import ssa
from sro.kube import discovery, http
from sro.model import desired

pytestmark = pytest.mark.integration


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
        good = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "dry", "namespace": namespace},
            "data": {"k": "v"},
        }
        answer = await writer.apply(good, dry_run=True)
        assert answer["metadata"]["name"] == "dry"
        assert answer["data"] == {"k": "v"}, "a dry run answers with the whole object (sro diff reads it)"
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
            assert "spec" not in created, "a real apply answers with the object's metadata only"
            again = await writer.apply(widget)
            assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
            ref = desired.ObjectRef.of(widget)
            status_answer = await writer.apply_status(ref, {"phase": "Ready"})
            assert int(status_answer["metadata"]["resourceVersion"]) > int(
                created["metadata"]["resourceVersion"]
            )
            assert "status" not in status_answer and "spec" not in status_answer
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
        owner_body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "owner", "namespace": namespace},
        }
        owner = await writer.apply(owner_body)
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
        await writer.apply(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "child", "namespace": namespace, "ownerReferences": [ref]},
            }
        )
        owner_ref = desired.ObjectRef.of(owner_body)
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
