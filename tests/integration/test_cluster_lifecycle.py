"""The cluster tool's own lifecycle: kernels, restarts, compaction, a 50-node cluster and ``down``.

Restart and compaction disturb every client of a cluster, so they run against a second,
private cluster started in its own ``SRO_CLUSTER_DIR`` beside the shared one (which
also proves two clusters run side by side); ``down`` must then leave no process,
listening port or directory behind.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cluster import Cluster
from support.waiting import wait_for_sync

pytestmark = pytest.mark.integration

NFD = "feature.node.kubernetes.io"
NEW_KERNEL = "5.14.0-427.42.1.el9_4.x86_64"


def test_changing_a_kernel_moves_the_nodes_nfd_labels_and_node_info(cluster: Cluster, node_pool: Any) -> None:
    pool = node_pool(count=2, kernel="5.14.0-284.30.1.el9_2.x86_64", os_version="9.2")
    moved, kept = pool.nodes
    before = cluster.kubectl_json("get", "node", moved)
    cluster.set_kernel([moved], NEW_KERNEL, os="rhel:9.4")
    node = cluster.kubectl_json("get", "node", moved)
    labels = node["metadata"]["labels"]
    assert labels[f"{NFD}/kernel-version.full"] == NEW_KERNEL
    assert labels[f"{NFD}/system-os_release.VERSION_ID"] == "9.4"
    assert labels[f"{NFD}/system-os_release.VERSION_ID.minor"] == "4"
    info = node["status"]["nodeInfo"]
    assert info["kernelVersion"] == NEW_KERNEL
    assert info["osImage"] == "Red Hat Enterprise Linux 9.4 (Plow)"
    assert info["bootID"] != before["status"]["nodeInfo"]["bootID"]
    other = cluster.kubectl_json("get", "node", kept)
    assert other["metadata"]["labels"][f"{NFD}/kernel-version.full"] == "5.14.0-284.30.1.el9_2.x86_64"


# --- a private cluster -------------------------------------------------------


@pytest.fixture(scope="module")
def private(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    handle = Cluster(tmp_path_factory.mktemp("private") / "cluster")
    handle.run("up", "--nodes", "50", "--kernels", "3")
    try:
        yield handle
    finally:
        if handle.dir.exists():
            handle.run("down")


def ssl_context(c: Cluster) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(c.dir / "pki" / "ca.crt"))
    context.load_cert_chain(str(c.dir / "pki" / "admin.crt"), str(c.dir / "pki" / "admin.key"))
    return context


def test_a_50_node_cluster_has_every_node_ready_with_its_nfd_labels(private: Cluster) -> None:
    env_line = private.run("env").strip()
    assert env_line == f"export KUBECONFIG={private.kubeconfig}"
    nodes = private.kubectl_json("get", "nodes")["items"]
    assert len(nodes) == 50
    kernels = set()
    for node in nodes:
        labels = node["metadata"]["labels"]
        ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "True", node["metadata"]["name"]
        assert labels[f"{NFD}/kernel-version.full"] == node["status"]["nodeInfo"]["kernelVersion"]
        assert labels[f"{NFD}/system-os_release.ID"] in ("rhel", "ubuntu")
        kernels.add(labels[f"{NFD}/kernel-version.full"])
    assert len(kernels) == 3
    without = [n for n in nodes if not any(k.startswith(f"{NFD}/pci-") for k in n["metadata"]["labels"])]
    assert 5 <= len(without) <= 15, "about one node in five carries no accelerator"


def test_up_twice_leaves_one_cluster(private: Cluster) -> None:
    pids_before = sorted(p.name for p in (private.dir / "pids").glob("*.json"))
    state_before = (private.dir / "state.json").read_text()
    private.run("up", "--nodes", "50", "--kernels", "3")
    assert (private.dir / "state.json").read_text() == state_before
    assert sorted(p.name for p in (private.dir / "pids").glob("*.json")) == pids_before
    assert len(private.kubectl_json("get", "nodes")["items"]) == 50


def test_the_api_server_answers_again_after_a_restart(private: Cluster) -> None:
    pid_before = json.loads((private.dir / "pids" / "apiserver.json").read_text())["pid"]
    private.restart("apiserver")
    pid_after = json.loads((private.dir / "pids" / "apiserver.json").read_text())["pid"]
    assert pid_after != pid_before
    assert private.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"
    private.kubectl("create", "configmap", "after-restart", "-n", "default")
    assert private.kubectl_json("get", "configmap", "after-restart", "-n", "default")["metadata"]["name"]


def test_pods_start_at_once_after_kwok_restarts(private: Cluster) -> None:
    private.restart("kwok")
    private.kubectl("run", "after-kwok", "-n", "default", "--image=example.com/app:1")
    # Well inside the 120 s node-lease duration: the new kwok took the nodes over at once.
    wait_for_sync(
        lambda: (
            private.kubectl_json("get", "pod", "after-kwok", "-n", "default")["status"].get("phase")
            == "Running"
        ),
        timeout=20,
        message="pod Running after a kwok restart",
    )


def watch_first_event(c: Cluster, path: str, resource_version: str) -> tuple[int, dict[str, Any]]:
    """HTTP status and first event (or error body) of a watch from ``resource_version``."""
    query = f"watch=1&resourceVersion={resource_version}&allowWatchBookmarks=true&timeoutSeconds=5"
    url = f"{c.server()}{path}?{query}"
    try:
        with urllib.request.urlopen(url, context=ssl_context(c), timeout=30) as resp:
            return resp.status, json.loads(resp.readline())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_after_compaction_a_watch_from_an_old_resource_version_gets_410_gone(private: Cluster) -> None:
    private.kubectl("create", "configmap", "churn", "-n", "default", "--from-literal=n=0")
    old = private.kubectl_json("get", "configmap", "churn", "-n", "default")["metadata"]["resourceVersion"]
    for n in range(1, 4):
        private.kubectl(
            "patch", "configmap", "churn", "-n", "default", "-p", json.dumps({"data": {"n": str(n)}})
        )
    status, event = watch_first_event(private, "/api/v1/namespaces/default/configmaps", old)
    assert status == 200 and event["type"] == "MODIFIED", "before compaction the old version is still served"

    revision = private.compact()
    assert revision > int(old)
    status, event = watch_first_event(private, "/api/v1/namespaces/default/configmaps", old)
    code = status if status != 200 else event["object"]["code"]
    assert code == 410, (status, event)
    if status == 200:
        assert event["type"] == "ERROR" and event["object"]["reason"] == "Expired"


def listening_ports(pids: set[int]) -> set[int]:
    """Loopback TCP ports in LISTEN state (from /proc/net/tcp)."""
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A":  # LISTEN
            ports.add(int(fields[1].split(":")[1], 16))
    return ports


def test_down_leaves_no_process_port_or_directory(private: Cluster) -> None:
    state = json.loads((private.dir / "state.json").read_text())
    pids = {json.loads(p.read_text())["pid"] for p in (private.dir / "pids").glob("*.json")}
    assert len(pids) == 6
    assert set(state["ports"].values()) - {state["ports"]["etcd_peer"]} <= listening_ports(pids)

    private.run("down")
    assert not private.dir.exists()
    for pid in pids:
        stat = Path(f"/proc/{pid}/stat")
        alive = stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
        assert not alive, f"process {pid} still runs"
    still = set(state["ports"].values()) & listening_ports(set())
    assert not still, f"ports still listening: {still}"
    proc = subprocess.run(
        [str(Path(__file__).resolve().parents[2] / "hack" / "cluster"), "env"],
        env={**os.environ, "SRO_CLUSTER_DIR": str(private.dir)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0
