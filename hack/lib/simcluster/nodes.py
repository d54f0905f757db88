"""Adding, removing and upgrading simulated nodes through the API server.

Nodes are created (never applied) so their ``status`` is kept; kwok then takes them
over because of the ``kwok.x-k8s.io/node: fake`` annotation and makes them Ready.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any

from simcluster import inventory, kube


def ready(node: dict[str, Any] | None) -> bool:
    """Whether the node's kubelet (kwok) reports it Ready (None, a node not there: no)."""
    if node is None:
        return False
    for cond in node.get("status", {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


async def create(client: kube.Kube, specs: Iterable[inventory.NodeSpec]) -> tuple[list[str], list[str]]:
    """Creates the nodes that do not exist yet; returns (created, already existing) names."""
    created: list[str] = []
    existing: list[str] = []

    async def one(spec: inventory.NodeSpec) -> None:
        try:
            await client.create("/api/v1/nodes", inventory.node_object(spec))
            created.append(spec.name)
        except kube.ApiError as e:
            if e.status != 409:
                raise
            existing.append(spec.name)

    await asyncio.gather(*(one(s) for s in specs))
    return sorted(created), sorted(existing)


async def wait_ready(client: kube.Kube, names: Iterable[str], *, max_seconds: float = 120.0) -> float:
    """Waits until every named node is Ready; returns the seconds it took."""
    want = set(names)
    start = time.monotonic()
    while True:
        listed = await client.get("/api/v1/nodes", request_seconds=60)
        reporting = {n["metadata"]["name"] for n in listed.get("items", []) if ready(n)}
        missing = want - reporting
        if not missing:
            return time.monotonic() - start
        if time.monotonic() - start > max_seconds:
            raise TimeoutError(
                f"{len(missing)} nodes not Ready after {max_seconds:.0f}s: {sorted(missing)[:10]}"
            )
        await asyncio.sleep(0.3 if len(want) < 200 else 2.0)  # a list of thousands of nodes is not free


async def delete(client: kube.Kube, names: Iterable[str]) -> None:
    await asyncio.gather(*(client.delete(f"/api/v1/nodes/{n}") for n in names))


async def wait_gone(client: kube.Kube, names: Iterable[str], *, max_seconds: float = 60.0) -> None:
    want = set(names)
    deadline = time.monotonic() + max_seconds
    while True:
        listed = await client.get("/api/v1/nodes", request_seconds=60)
        left = want & {n["metadata"]["name"] for n in listed.get("items", [])}
        if not left:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"nodes still present after {max_seconds:.0f}s: {sorted(left)[:10]}")
        await asyncio.sleep(0.2)


async def change_kernel(
    client: kube.Kube, name: str, *, kernel: str, os_id: str | None = None, os_version: str | None = None
) -> float:
    """What NFD and the kubelet publish after a node reboots into another kernel (and maybe OS);
    the ``time.monotonic()`` at which the new labels were sent (what a controller reacts to)."""
    node = await client.get(f"/api/v1/nodes/{name}")
    labels = dict(node["metadata"].get("labels") or {})
    stale = [k for k in labels if k.startswith(f"{inventory.NFD}/kernel-version.")]
    patch_labels: dict[str, str | None] = dict.fromkeys(stale)
    patch_labels.update(inventory.kernel_labels(kernel))
    info = dict(node["status"].get("nodeInfo") or {})
    machine = info.get("machineID") or name
    new_info = inventory.node_info(
        kernel, os_image=info.get("osImage", ""), arch=info.get("architecture", "amd64"), machine=machine
    )
    if os_id and os_version:
        stale_os = [k for k in labels if k.startswith(f"{inventory.NFD}/system-os_release.")]
        patch_labels.update(dict.fromkeys(stale_os))
        patch_labels.update(inventory.os_labels(os_id, os_version))
        new_info["osImage"] = inventory.os_image(os_id, os_version)
    # The status first, so a watcher that sees the new label also sees the new nodeInfo.
    await client.patch(
        f"/api/v1/nodes/{name}/status",
        {"status": {"nodeInfo": {k: new_info[k] for k in ("kernelVersion", "bootID", "osImage")}}},
    )
    sent = time.monotonic()
    await client.patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": patch_labels}})
    return sent
