"""A pod being deleted goes at once, as if its containers stopped immediately, and only
that pod: the delete carries its uid as a precondition, as a kubelet's does.

kwok can finish a deletion itself (a Stage with ``delete: true``), but it deletes by name.
At 5,000 nodes on two cores its work queue fell minutes behind, and a delete replayed for
a pod long gone landed on the pod of the same name made since: sro makes a per-node pod
under a fixed name, so one deletion by sro became eight in a row on one node, each
re-creation killed by the replay of the one before. With the uid as a precondition a
late delete finds a newer pod and does nothing (409).

Finalizers are left to whoever put them there, as with a real kubelet: the API server
removes the pod once they are gone.
"""

from __future__ import annotations

import asyncio
from typing import Any

from simcluster import kube, pod_work


def deleting(pod: dict[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def options(uid: str) -> dict[str, Any]:
    """Delete now, and only the pod with this uid."""
    return {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": uid},
    }


class Finisher:
    """Pods with a deletion timestamp, deleted for good one at a time per worker."""

    def __init__(self, client: kube.Kube) -> None:
        self.client = client
        self.queue: asyncio.Queue[pod_work.PodKey] = asyncio.Queue()
        self.queued: set[str] = set()

    def on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        if kind == "DELETED" or not deleting(pod) or not (pod.get("spec") or {}).get("nodeName"):
            return  # an unscheduled pod has no kubelet: the API server deletes it at once
        if meta["uid"] not in self.queued:
            self.queued.add(meta["uid"])
            self.queue.put_nowait((meta["namespace"], meta["name"], meta["uid"]))

    async def worker(self) -> None:
        await pod_work.worker(self.queue, self.finish, failed="delete failed", done=self.queued.discard)

    async def finish(self, namespace: str, name: str, uid: str) -> None:
        try:
            await self.client.request(
                "DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", body=options(uid)
            )
        except kube.ApiError as e:
            if e.status not in (404, 409):  # gone, or a newer pod of that name: nothing to do
                raise
