"""Writes through a running manager: drift is put back, an unchanged desired state sends nothing.

Deletions report which were done: taken, or answered "already gone", never one refused.

A manager watches ConfigMaps in the test's namespace as primaries and owns Secrets
(label ``sro.dev/owner``); its reconcile applies one Secret per ConfigMap with
``apply.diff.needs_apply`` before ``apply``. Write counts come from the manager's own metrics.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest
from support import waiting

from sro import settings
from sro.apply import diff, ssa
from sro.engine import writes as writes_
from sro.kube import discovery, http
from sro.model import desired
from sro.plan import lifecycle
from sro.runtime import result
from sro.runtime.manager import Manager

pytestmark = pytest.mark.integration


def writes(m: Manager, resource: str) -> float:
    return sum(
        m.metrics.total("sro_api_requests_total", verb=v, resource=resource) for v in ("patch", "post", "put")
    )


def run_settings(cluster: Any, **lease: Any) -> settings.Settings:
    return settings.Settings(
        api=settings.ApiSettings(kubeconfig=str(cluster.kubeconfig)),
        server=settings.ServerSettings(port=0),
        lease=settings.LeaseSettings(enabled=False, **lease),
        controller=settings.ControllerSettings(workers=2),
    )


def secret_for(ns: str, name: str, value: str, *, owner_uid: str) -> dict[str, Any]:
    """The Secret a ConfigMap ``name`` owns: the owner label (the watch's filter) and the
    controller reference to it (what makes it the primary's, and cached whole)."""
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": owner_uid, "controller": True}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"out-{name}",
            "namespace": ns,
            "labels": {"sro.dev/owner": name},
            "ownerReferences": [owner],
        },
        "stringData": {"v": value},
    }


async def test_drift_is_restored_and_an_unchanged_state_sends_no_write(cluster: Any, namespace: str) -> None:
    m = Manager(run_settings(cluster))
    m.watch_primary("v1", "ConfigMap", namespace=namespace)
    m.watch_owned("v1", "Secret", namespace=namespace)
    passes: list[str] = []

    async def reconcile(key: str) -> result.Result:
        ns, _, name = key.partition("/")
        passes.append(name)
        primary = m.store("v1", "ConfigMap", namespace=ns).find(name, namespace=ns)
        if primary is None or name == "kube-root-ca.crt":
            return result.DONE
        desired = secret_for(ns, name, str(primary.body.get("data", {}).get("v", "")), owner_uid=primary.uid)
        live = m.store("v1", "Secret", namespace=ns).find(f"out-{name}", namespace=ns)
        # Secrets come back with data, not stringData: compare what the server keeps.
        desired_live = {
            **desired,
            "data": {"v": base64.b64encode(desired["stringData"]["v"].encode()).decode()},
        }
        del desired_live["stringData"]
        if diff.needs_apply(desired_live, live.body if live else None):
            await m.writer.apply(desired_live)
        return result.DONE

    m.reconcile_with(reconcile)
    running = asyncio.create_task(m.run())
    try:
        await waiting.wait_for(lambda: m.role == "leader", timeout=30, message="manager working")
        cluster.kubectl("create", "configmap", "gpu", "-n", namespace, "--from-literal=v=one")

        def secret_value() -> str:
            live = m.store("v1", "Secret", namespace=namespace).find("out-gpu", namespace=namespace)
            return base64.b64decode(live.body["data"]["v"]).decode() if live else ""

        def server_value() -> str:
            got = cluster.kubectl_json("get", "secret", "out-gpu", "-n", namespace)
            return base64.b64decode(got["data"]["v"]).decode()

        await waiting.wait_for(lambda: secret_value() == "one", timeout=30, message="secret made")
        first = writes(m, "secrets")
        assert first >= 1

        # Unchanged desired state: reconcile again (an irrelevant touch of the primary) -> no write.
        before = len(passes)
        cluster.kubectl("annotate", "configmap", "gpu", "-n", namespace, "touch=1")
        await waiting.wait_for(lambda: len(passes) > before, timeout=30, message="reconciled again")
        await waiting.wait_for(
            lambda: len(m.queue) == 0 and not m.queue.processing, timeout=10, message="idle"
        )
        assert writes(m, "secrets") == first, "a no-op apply was sent"

        # Someone edits the owned object: put back.
        cluster.kubectl("patch", "secret", "out-gpu", "-n", namespace, "-p", '{"stringData":{"v":"evil"}}')
        await waiting.wait_for(
            lambda: writes(m, "secrets") == first + 1 and server_value() == "one",
            timeout=30,
            message="edit reverted",
        )
        after_edit = writes(m, "secrets")

        # Someone deletes it: made again.
        cluster.kubectl("delete", "secret", "out-gpu", "-n", namespace)
        await waiting.wait_for(
            lambda: writes(m, "secrets") == after_edit + 1 and server_value() == "one",
            timeout=30,
            message="deleted object made again",
        )
        # The desired state changes: exactly one more write.
        cluster.kubectl("patch", "configmap", "gpu", "-n", namespace, "-p", '{"data":{"v":"two"}}')
        await waiting.wait_for(lambda: secret_value() == "two", timeout=30, message="desired change applied")
        print(f"\nsecret writes: {writes(m, 'secrets'):.0f} over {len(passes)} reconciles")
    finally:
        m.stop()
        assert await asyncio.wait_for(running, 30) == 0


async def test_deletions_taken_or_already_gone_are_reported_done_and_a_refused_one_is_not(
    cluster: Any, namespace: str
) -> None:
    """The engine shows the pods it deleted as deleting until its cache does
    (``engine.memory``): only from deletions the API server took or found done."""
    async with await http.Api.connect(run_settings(cluster).api) as api:
        writer = ssa.Writer(api=api, discovery=discovery.Discovery(api))
        for name in ("taken", "refused"):
            cluster.kubectl("create", "configmap", name, "-n", namespace)

        def deletion(name: str, uid: str) -> lifecycle.Deletion:
            ref = desired.ObjectRef(api_version="v1", kind="ConfigMap", namespace=namespace, name=name)
            return lifecycle.Deletion(ref=ref, uid=uid)

        uid = cluster.kubectl_json("get", "configmap", "taken", "-n", namespace)["metadata"]["uid"]
        wanted = (
            deletion("taken", uid),
            deletion("never-made", "0000"),
            deletion("refused", "not-its-uid"),  # the uid precondition fails: 409
        )
        report = await writes_.delete_objects(writer, wanted, sr_name="t")
        assert set(report.taken) == set(wanted[:2])  # concurrent: in the order they were answered
        assert [f.ref.name for f in report.failures if f.ref is not None] == ["refused"]
        assert {r.name for r in report.absent} == {"never-made"} and report.deleted == 1
        left = cluster.kubectl_json("get", "configmaps", "-n", namespace)["items"]
        assert "refused" in {c["metadata"]["name"] for c in left}
