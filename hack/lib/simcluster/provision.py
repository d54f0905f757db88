"""What ``up`` puts into a fresh API server before kwok and the simulator start.

kwok reads per-pod logs from a ``Logs`` custom resource, and the simulator reads the
list of missing images from a ConfigMap; both must exist before those processes start.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import yaml

from simcluster import controlplane, devsim, kube, layout


async def bootstrap(run: layout.RunDir, state: controlplane.State) -> None:
    """Objects the simulator needs before kwok and the helper start."""
    async with kube.Kube(server=state.server, run=run) as client:
        for path in sorted(layout.KWOK_CRDS.glob("*.yaml")):
            crd = yaml.safe_load(path.read_text())
            try:
                await client.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
            except kube.ApiError as e:
                if e.status != 409:
                    raise
            await _wait(lambda name=crd["metadata"]["name"]: _crd_established(client, name), what="CRD")
        ns, name = devsim.MISSING_IMAGES
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns},
            "data": {"patterns": ""},
        }
        await _wait(
            lambda: _create_ok(client, f"/api/v1/namespaces/{ns}/configmaps", body), what="kube-system"
        )


async def _crd_established(client: kube.Kube, name: str) -> bool:
    crd = await client.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


async def _create_ok(client: kube.Kube, path: str, body: dict[str, Any]) -> bool:
    try:
        await client.create(path, body)
    except kube.ApiError as e:
        if e.status == 404:  # the namespace is not there yet
            return False
        if e.status != 409:
            raise
    return True


async def _wait(check: Any, *, what: str, max_seconds: float = 30) -> None:
    deadline = time.monotonic() + max_seconds
    while not await check():
        if time.monotonic() > deadline:
            raise controlplane.ClusterError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def release_node_leases(run: layout.RunDir, state: controlplane.State) -> None:
    async with kube.Kube(server=state.server, run=run) as client:
        await client.request("DELETE", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")
