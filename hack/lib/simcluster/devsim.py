"""The simulated machines' side of things that kwok's Stages cannot decide alone.

kwok moves pods and nodes through states by rules over one object at a time. Some
decisions need another object: whether a pod fails depends on its *node* (broken),
whether its image exists depends on the cluster's list of missing images, and a
device plugin makes devices appear on its node. This process watches pods, nodes and
that list, and records each decision as pod annotations the Stages select on
(see hack/kwok/README.md), or patches the node's capacity; it serves each pod's log,
writing a driver's ready line only once its build has ended (``pod_logs``); and it puts back the pod
readiness a node controller took while the node's heartbeats lagged, finishes the
deletion of pods being deleted, each by its uid, and reports each node's status every
five minutes, as a kubelet does (``pod_readiness``, ``pod_deletion``, ``node_status``).
It is started by ``hack/cluster up`` and stopped by ``down``.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import fnmatch
import json
import logging
import signal
from collections.abc import Awaitable
from typing import Any

from simcluster import (
    controlplane,
    inventory,
    kube,
    layout,
    node_images,
    node_status,
    pod_deletion,
    pod_logs,
    pod_readiness,
    pod_work,
)

SIM = inventory.SIM
ADMITTED = f"{SIM}/admitted"
IMAGE_MISSING = f"{SIM}/image-missing"
OUTCOME = f"{SIM}/outcome"
FAIL = f"{SIM}/fail"
BROKEN = f"{SIM}/broken"
MISSING_IMAGES = ("kube-system", "sim-missing-images")
DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
RUN_TO_COMPLETION = ("Never", "OnFailure")

log = logging.getLogger("devsim")


def missing_patterns(configmap: dict[str, Any] | None) -> list[str]:
    """The glob patterns listed (one a line) under ``patterns`` in the missing-images ConfigMap."""
    text = ((configmap or {}).get("data") or {}).get("patterns", "")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def missing_image(pod: dict[str, Any], patterns: list[str]) -> str | None:
    spec = pod.get("spec", {})
    for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        image = container.get("image", "")
        if any(fnmatch.fnmatchcase(image, p) for p in patterns):
            return str(image)
    return None


def is_device_plugin(pod: dict[str, Any]) -> bool:
    for volume in pod.get("spec", {}).get("volumes") or []:
        path = (volume.get("hostPath") or {}).get("path", "")
        if path.rstrip("/") == DEVICE_PLUGIN_DIR:
            return True
    return False


def is_ready(pod: dict[str, Any]) -> bool:
    if pod["metadata"].get("deletionTimestamp") or pod.get("status", {}).get("phase") != "Running":
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in pod.get("status", {}).get("conditions") or []
    )


def node_devices(node: dict[str, Any]) -> dict[str, int]:
    raw = (node["metadata"].get("annotations") or {}).get(inventory.DEVICES_ANNOTATION)
    if not raw:
        return {}
    try:
        return {str(k): int(v) for k, v in json.loads(raw).items()}
    except (ValueError, AttributeError):
        log.warning(
            "node %s: unreadable %s annotation %r",
            node["metadata"]["name"],
            inventory.DEVICES_ANNOTATION,
            raw,
        )
        return {}


class Simulator:
    """In-memory view of nodes and device-plugin pods, and the workers that act on it."""

    def __init__(
        self,
        client: kube.Kube,
        run: layout.RunDir,
        *,
        build_seconds: tuple[float, float] = controlplane.State.build_seconds,
    ) -> None:
        self.client = client
        self.run = run
        self.build_seconds = build_seconds
        self.builds = pod_logs.Builds(run)
        self.nodes: dict[str, dict[str, Any]] = {}
        self.plugins: dict[str, set[str]] = {}  # node -> uids of Ready device-plugin pods
        self.plugin_node: dict[str, str] = {}  # pod uid -> node, for Ready device-plugin pods
        self.patterns: list[str] = []
        self.blocked: dict[str, tuple[str, str]] = {}  # pod uid -> (namespace, name) with a missing image
        self.admit_queue: asyncio.Queue[tuple[str, str, str]] = asyncio.Queue()
        self.admitting: set[str] = set()
        self.latest: dict[str, dict[str, Any]] = {}  # uid -> newest copy seen of a pod awaiting admission
        self.node_queue: asyncio.Queue[str] = asyncio.Queue()
        self.node_dirty: set[str] = set()
        self.images = node_images.NodeImages()
        self.readiness = pod_readiness.Restorer(client)
        self.deletion = pod_deletion.Finisher(client)
        self.status = node_status.Reporter(client, self.nodes)

    # --- nodes -------------------------------------------------------------
    def on_node(self, kind: str, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        self.status.on_node(kind, node)
        if kind == "DELETED":
            self.nodes.pop(name, None)
            return
        self.nodes[name] = node
        self.readiness.on_node(node)
        if node_devices(node):
            self.mark_node(name)

    def mark_node(self, name: str) -> None:
        if name not in self.node_dirty:
            self.node_dirty.add(name)
            self.node_queue.put_nowait(name)

    async def reconcile_node(self, name: str) -> None:
        """Devices in capacity exactly while a Ready device-plugin pod runs on the node."""
        node = self.nodes.get(name)
        if node is None:
            return
        devices = node_devices(node)
        status = node.get("status", {})
        want = {k: str(v) for k, v in devices.items()} if self.plugins.get(name) else {}
        patch: dict[str, dict[str, str | None]] = {"capacity": {}, "allocatable": {}}
        for field in ("capacity", "allocatable"):
            have = status.get(field) or {}
            for resource in devices:
                if have.get(resource) != want.get(resource):
                    patch[field][resource] = want.get(resource)
        if patch["capacity"] or patch["allocatable"]:
            log.info("node %s: devices %s", name, want or "removed")
            try:
                await self.client.patch(f"/api/v1/nodes/{name}/status", {"status": patch})
            except kube.ApiError as e:
                if e.status != 404:
                    raise

    # --- pods --------------------------------------------------------------
    def on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        uid = meta["uid"]
        node = pod.get("spec", {}).get("nodeName")
        annotations = meta.get("annotations") or {}
        self.images.on_pod(kind, pod)
        self.readiness.on_pod(kind, pod, node=self.nodes.get(node or ""))
        self.deletion.on_pod(kind, pod)
        self.builds.on_pod(kind, pod)
        if is_device_plugin(pod):
            before = self.plugin_node.pop(uid, None)
            if before is not None:
                self.plugins.get(before, set()).discard(uid)
            if kind != "DELETED" and node and is_ready(pod):
                self.plugin_node[uid] = node
                self.plugins.setdefault(node, set()).add(uid)
            for changed in {before, node}:
                if changed:
                    self.mark_node(changed)
        if kind == "DELETED":
            self.blocked.pop(uid, None)
            self.latest.pop(uid, None)
            return
        if IMAGE_MISSING in annotations:
            self.blocked[uid] = (meta["namespace"], meta["name"])
        else:
            self.blocked.pop(uid, None)
        if node and ADMITTED not in annotations and not meta.get("deletionTimestamp"):
            self.latest[uid] = pod
            if uid not in self.admitting:
                self.admitting.add(uid)
                self.admit_queue.put_nowait((meta["namespace"], meta["name"], uid))
        else:
            self.latest.pop(uid, None)

    async def admit(self, namespace: str, name: str, uid: str) -> None:
        """Decides what the pod's containers will do and records it for the Stages."""
        pod = self.latest.pop(uid, None)  # the watch's copy saves a GET per pod at scale
        if pod is None:
            try:
                pod = await self.client.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
            except kube.ApiError as e:
                if e.status == 404:
                    return
                raise
        meta = pod["metadata"]
        if meta["uid"] != uid or ADMITTED in (meta.get("annotations") or {}):
            return
        annotations = meta.get("annotations") or {}
        node = self.nodes.get(pod["spec"].get("nodeName", ""), {})
        broken = (node.get("metadata", {}).get("annotations") or {}).get(BROKEN) == "true"
        broken = broken or self.images.breaks(node)
        fails = annotations.get(FAIL) == "true" or (
            broken and pod["spec"].get("restartPolicy", "Always") in RUN_TO_COMPLETION
        )
        decided: dict[str, str] = {ADMITTED: "true", OUTCOME: "fail" if fails else "succeed"}
        image = missing_image(pod, self.patterns)
        if image:
            decided[IMAGE_MISSING] = image
        chosen = annotations.get(pod_logs.LOGS)
        known = None if chosen else pod_logs.known_log(pod)
        if chosen:
            await self.serve_logs(pod, chosen.replace("\\n", "\n").split("\n"))
        elif known is not None:
            build = pod_logs.build_seconds(annotations, default=self.build_seconds)
            if build > 0:
                now = datetime.datetime.now(datetime.UTC).timestamp()
                decided[pod_logs.BUILT_AT] = pod_logs.stamp(now + build)
            await self.serve_logs(pod, known.lines(built=build <= 0))
        log.info("pod %s/%s on %s: %s", namespace, name, pod["spec"].get("nodeName"), decided)
        try:
            await self.client.patch(
                f"/api/v1/namespaces/{namespace}/pods/{name}",
                {"metadata": {"annotations": decided, "resourceVersion": meta["resourceVersion"]}},
            )
        except kube.ApiError as e:
            if e.status == 409:  # changed meanwhile: look again
                await self.admit(namespace, name, uid)
            elif e.status != 404:
                raise

    async def serve_logs(self, pod: dict[str, Any], lines: list[str]) -> None:
        """Writes the pod's lines as a CRI log file and points a kwok Logs object at it."""
        meta = pod["metadata"]
        path = pod_logs.path_of(self.run, pod)
        pod_logs.write(path, lines)
        body = {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "Logs",
            "metadata": {
                "name": meta["name"],
                "namespace": meta["namespace"],
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}
                ],
            },
            "spec": {"logs": [{"logsFile": str(path), "follow": False}]},
        }
        base = f"/apis/kwok.x-k8s.io/v1alpha1/namespaces/{meta['namespace']}/logs"
        try:
            await self.client.create(base, body)
        except kube.ApiError as e:
            if e.status != 409:
                raise
            await self.client.patch(
                f"{base}/{meta['name']}", {"metadata": body["metadata"], "spec": body["spec"]}
            )

    # --- missing images ----------------------------------------------------
    def on_missing_images(self, kind: str, configmap: dict[str, Any]) -> None:
        self.patterns = [] if kind == "DELETED" else missing_patterns(configmap)
        log.info("missing images: %s", self.patterns)
        for uid, (namespace, name) in list(self.blocked.items()):
            self.admit_queue.put_nowait((namespace, name, "recheck:" + uid))

    async def recheck(self, namespace: str, name: str) -> None:
        """A pod waiting on a missing image starts once no pattern matches it any more."""
        try:
            pod = await self.client.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
        except kube.ApiError as e:
            if e.status == 404:
                return
            raise
        if IMAGE_MISSING in (pod["metadata"].get("annotations") or {}) and not missing_image(
            pod, self.patterns
        ):
            log.info("pod %s/%s: image now present", namespace, name)
            await self.client.patch(
                f"/api/v1/namespaces/{namespace}/pods/{name}",
                {"metadata": {"annotations": {IMAGE_MISSING: None}}},
            )

    # --- workers -----------------------------------------------------------
    async def admit_worker(self) -> None:
        await pod_work.worker(
            self.admit_queue, self.admit_or_recheck, failed="admission failed", done=self.admitting.discard
        )

    async def admit_or_recheck(self, namespace: str, name: str, uid: str) -> None:
        if uid.startswith("recheck:"):
            await self.recheck(namespace, name)
        else:
            await self.admit(namespace, name, uid)

    async def node_worker(self) -> None:
        while True:
            name = await self.node_queue.get()
            self.node_dirty.discard(name)
            try:
                await self.reconcile_node(name)
            except Exception:
                log.exception("node %s: capacity update failed; retrying", name)
                await asyncio.sleep(1)
                self.mark_node(name)


async def serve(run: layout.RunDir) -> None:
    state = controlplane.State.load(run)
    if state is None:
        raise SystemExit(f"no cluster state in {run.root}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with kube.Kube(server=state.server, run=run, who="devsim") as client:
        low, high = state.build_seconds
        sim = Simulator(client, run, build_seconds=(low, high))

        def reset_pods() -> None:
            sim.plugins.clear()
            sim.plugin_node.clear()
            sim.blocked.clear()
            sim.images.clear()
            sim.readiness.marked.clear()
            sim.builds.reset()
            for name in sim.nodes:
                sim.mark_node(name)

        synced = [asyncio.Event() for _ in range(3)]
        ns, cm = MISSING_IMAGES
        watches: list[Awaitable[None]] = [
            kube.informer(client, "/api/v1/nodes", sim.on_node, synced=synced[0], reset=sim.nodes.clear),
            kube.informer(
                client,
                f"/api/v1/namespaces/{ns}/configmaps?fieldSelector=metadata.name%3D{cm}",
                sim.on_missing_images,
                synced=synced[1],
            ),
            kube.informer(client, "/api/v1/pods", sim.on_pod, synced=synced[2], reset=reset_pods),
        ]
        tasks = [asyncio.ensure_future(w) for w in watches]
        tasks += [asyncio.ensure_future(sim.admit_worker()) for _ in range(16)]
        tasks += [asyncio.ensure_future(sim.node_worker()) for _ in range(8)]
        tasks += [asyncio.ensure_future(sim.readiness.worker()) for _ in range(4)]
        tasks += [asyncio.ensure_future(sim.deletion.worker()) for _ in range(8)]
        tasks.append(asyncio.ensure_future(sim.status.timer()))
        tasks += [asyncio.ensure_future(sim.status.worker()) for _ in range(node_status.WORKERS)]
        for event in synced:
            await event.wait()
        await asyncio.to_thread((run.root / "devsim.ready").write_text, "ready\n")
        log.info("synced: %d nodes", len(sim.nodes))
        await stop.wait()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    run = layout.RunDir(layout.default_run_dir())
    asyncio.run(serve(run))
    return 0
