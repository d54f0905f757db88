"""``hack/bench cluster``: how the simulated cluster holds up at scale.

Brings up a cluster of N nodes in its own run directory (never the developer's),
optionally runs a DaemonSet on every node, then for M minutes checks that every node
stays Ready and samples the resident memory of each control-plane process. Prints
figures; asserts nothing about speed (targets are for people to read).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from simcluster import controlplane, daemons, kube, layout
from simcluster import nodes as nodes_

MB = 1024 * 1024


def rss(run: layout.RunDir) -> dict[str, int]:
    out = {}
    for record in daemons.load_all(run.pids):
        value = daemons.rss_bytes(record)
        if value is not None:
            out[record.name] = value
    return out


def hack_cluster(run: layout.RunDir, *args: str) -> float:
    start = time.monotonic()
    env = {**os.environ, "SRO_CLUSTER_DIR": str(run.root)}
    subprocess.run([str(layout.HACK / "cluster"), *args], env=env, check=True)
    return time.monotonic() - start


async def daemonset_everywhere(client: kube.Kube, nodes: int) -> float:
    """Seconds until a DaemonSet has a Ready pod on every node (counted from the pods)."""
    ns = "bench"
    await client.create("/api/v1/namespaces", {"metadata": {"name": ns}})
    body = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "everywhere"},
        "spec": {
            "selector": {"matchLabels": {"app": "everywhere"}},
            "template": {
                "metadata": {"labels": {"app": "everywhere"}},
                "spec": {"containers": [{"name": "c", "image": "example.com/agent:1"}]},
            },
        },
    }
    start = time.monotonic()
    while True:  # the default ServiceAccount appears shortly after the namespace
        try:
            await client.create(f"/apis/apps/v1/namespaces/{ns}/daemonsets", body)
            break
        except kube.ApiError as e:
            if e.status != 403 or time.monotonic() - start > 30:
                raise
            await asyncio.sleep(0.2)
    while True:
        pods = await client.get(f"/api/v1/namespaces/{ns}/pods", request_seconds=120)
        ready = sum(1 for p in pods["items"] if _ready_pod(p))
        if ready >= nodes:
            return time.monotonic() - start
        await asyncio.sleep(1)


def _ready_pod(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in pod.get("status", {}).get("conditions") or []
    )


async def observe(run: layout.RunDir, *, nodes: int, minutes: float, pods: bool) -> int:
    state = controlplane.State.load(run)
    assert state is not None
    peak: dict[str, int] = {}
    not_ready_seen = 0
    async with kube.Kube(server=state.server, run=run) as client:
        if pods:
            took = await daemonset_everywhere(client, nodes)
            print(f"DaemonSet pods Ready on all {nodes} nodes after {took:.1f}s", flush=True)
        deadline = time.monotonic() + minutes * 60
        checks = 0
        while True:
            listed = await client.get("/api/v1/nodes", request_seconds=120)
            items = listed["items"]
            bad = [n["metadata"]["name"] for n in items if not nodes_.ready(n)]
            checks += 1
            if len(items) != nodes or bad:
                not_ready_seen += 1
                print(f"  check {checks}: {len(items)} nodes, not Ready: {bad[:10]}", flush=True)
            for name, value in rss(run).items():
                peak[name] = max(peak.get(name, 0), value)
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(min(15.0, max(0.0, deadline - time.monotonic())))
    now = rss(run)
    print(f"\nnode checks: {checks} over {minutes:g} min; with a node missing or not Ready: {not_ready_seen}")
    print(f"{'process':20} {'RSS now':>10} {'RSS peak':>10}")
    for name in controlplane.COMPONENTS:
        if name in now:
            print(f"{name:20} {now[name] / MB:9.0f}M {peak.get(name, 0) / MB:9.0f}M")
    control_plane = [n for n in controlplane.COMPONENTS if n != "devsim"]
    total = sum(now.get(n, 0) for n in control_plane)
    total_peak = sum(peak.get(n, 0) for n in control_plane)
    figures = f"{total / MB:9.0f}M {total_peak / MB:9.0f}M"
    print(f"{'control plane total':20} {figures}   (target < 1536M; devsim excluded)")
    return 1 if not_ready_seen else 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="hack/bench cluster", description=__doc__)
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--kernels", type=int, default=6)
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--pods", action="store_true", help="also run a DaemonSet on every node")
    p.add_argument("--keep", action="store_true", help="leave the cluster running afterwards")
    args = p.parse_args(argv)
    base = os.environ.get("SRO_BENCH_DIR") or tempfile.mkdtemp(prefix="sro-bench-")
    run = layout.RunDir(Path(base).resolve() / "cluster")
    print(
        f"bench cluster in {run.root}: {args.nodes} nodes, {args.kernels} kernels, {args.minutes:g} min",
        flush=True,
    )
    took = hack_cluster(run, "up", "--nodes", str(args.nodes), "--kernels", str(args.kernels))
    print(f"hack/cluster up (with {args.nodes} nodes Ready): {took:.1f}s", flush=True)
    try:
        return asyncio.run(observe(run, nodes=args.nodes, minutes=args.minutes, pods=args.pods))
    finally:
        if not args.keep:
            print(f"hack/cluster down: {hack_cluster(run, 'down'):.1f}s")
            if not os.environ.get("SRO_BENCH_DIR"):
                shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
