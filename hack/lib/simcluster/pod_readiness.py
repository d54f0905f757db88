"""What a kubelet does for its pods when its node reports again: Ready comes back.

When a node's heartbeats stop for the grace period (on this machine, at thousands of
nodes, kwok's lease renewals fall minutes behind), the node lifecycle controller marks
the node Unknown and sets every pod on it ``Ready=False``. A real kubelet, once it reports
again, puts ``Ready`` back on its next status sync for every pod whose containers are
still ready. kwok does not: those pods stayed not Ready for good, and the node never
completed a state again. So devsim does the kubelet's part: a running pod that is not
Ready while its containers are, on a node that reports Ready, is set Ready again.

The blink itself stays: the pods are not Ready for as long as the node controller says
so, as on real nodes, and an operator sees that.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from typing import Any

from simcluster import kube, nodes, pod_work

log = logging.getLogger("devsim.readiness")


def _condition(obj: dict[str, Any], kind: str) -> str:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return str(c.get("status", ""))
    return ""


def marked_not_ready(pod: dict[str, Any]) -> bool:
    """A running pod the node controller set not Ready while its containers are ready."""
    meta = pod.get("metadata") or {}
    return (
        not meta.get("deletionTimestamp")
        and (pod.get("status") or {}).get("phase") == "Running"
        and _condition(pod, "Ready") == "False"
        and _condition(pod, "ContainersReady") == "True"
    )


class Restorer:
    """Pods marked not Ready, by node, and the worker that sets them Ready again."""

    def __init__(self, client: kube.Kube) -> None:
        self.client = client
        self.marked: dict[str, dict[str, tuple[str, str]]] = {}  # node -> uid -> (namespace, name)
        self.queue: asyncio.Queue[pod_work.PodKey] = asyncio.Queue()

    def on_pod(self, kind: str, pod: dict[str, Any], *, node: dict[str, Any] | None) -> None:
        meta = pod["metadata"]
        name = (pod.get("spec") or {}).get("nodeName") or ""
        if not name:
            return
        if kind == "DELETED" or not marked_not_ready(pod):
            self.marked.get(name, {}).pop(meta["uid"], None)
            return
        self.marked.setdefault(name, {})[meta["uid"]] = (meta["namespace"], meta["name"])
        if nodes.ready(node):
            self.queue.put_nowait((meta["namespace"], meta["name"], meta["uid"]))

    def on_node(self, node: dict[str, Any]) -> None:
        if nodes.ready(node):
            for uid, (namespace, name) in self.marked.get(node["metadata"]["name"], {}).items():
                self.queue.put_nowait((namespace, name, uid))

    async def worker(self) -> None:
        await pod_work.worker(self.queue, self.restore, failed="Ready not restored")

    async def restore(self, namespace: str, name: str, uid: str) -> None:
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        try:
            pod = await self.client.get(path)
        except kube.ApiError as e:
            if e.status == 404:
                return
            raise
        if pod["metadata"]["uid"] != uid or not marked_not_ready(pod):
            return  # gone, replaced, or no longer marked: nothing a kubelet would change
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        ready = {"type": "Ready", "status": "True", "lastTransitionTime": now}
        log.info("pod %s/%s: Ready again (its node reports)", namespace, name)
        try:
            await self.client.patch(f"{path}/status", {"status": {"conditions": [ready]}}, strategic=True)
        except kube.ApiError as e:
            if e.status != 404:
                raise
