"""``hack/bench writes``: what one write of each kind sro sends costs the control plane.

On a machine whose cores the control plane and the operator share, an operator's speed
is bounded by the CPU its writes cost the API server, etcd and every watcher of the
written object, not only by its own. This measures it, per kind of write, on a cluster
of its own (``--nodes`` simulated GPU nodes):

* ``POST pod`` — what the converge floor sends (``converge_floor.post_all``): the floor
  every other figure is a ratio to;
* ``apply pod`` — a server-side apply creating a per-node pod, as sro makes validations;
* ``merge-patch node label`` — one label on a node, as sro records a state there (a
  node is a large object every node watcher receives again: the controller-manager,
  the scheduler, kwok, the device simulator);
* ``apply node label`` — the same label by server-side apply, for comparison.

With ``--daemonsets N``, N DaemonSets over every node run first (as an operand's do), so
each node write also costs the DaemonSet controller its look at every DaemonSet for that
node: what a label patch costs in a cluster that runs sro's operands.

After ``WARM_UP`` writes of every kind, each kind is sent ``--writes`` times,
``--concurrency`` at a time, with a few seconds of settling after (watchers catch up);
the CPU every control-plane process spent in that window, less what the same cluster
spends idle in as long (measured just before, as the nodes' heartbeats cost something
too), divided by the writes, is the figure. Pods use a scheduler nobody runs, so they
stay Pending: the write is measured, not a pod's life.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from simcluster import controlplane, converge, daemons, kube, layout, stopping

NAMESPACE = "write-cost"
SETTLE = 3.0  # seconds after the last answer: the watchers' share lands in the window
APPLY = "application/apply-patch+yaml"
WARM_UP = 100  # writes of each kind sent, and not measured, before any is measured
DAEMONSETS_READY = 600.0  # seconds the ``--daemonsets`` get to run a Ready pod on every node


def pod(name: str) -> dict[str, Any]:
    """A pod shaped like a validation sro makes: owner label, hash annotation, toleration,
    a required affinity on a state label, one privileged container."""
    term = {
        "matchExpressions": [{"key": "bench.sro.dev/state-driver", "operator": "In", "values": ["ready"]}]
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"app": "write-cost", "sro.dev/owner": "bench"},
            "annotations": {"sro.dev/desired-hash": "0" * 64},
        },
        "spec": {
            "schedulerName": "nobody",  # no scheduler binds it: only the write is measured
            "restartPolicy": "Never",
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
                }
            },
            "containers": [
                {
                    "name": "validate",
                    "image": "registry.example.com/validator:1.0",
                    "command": ["sh", "-c", "echo validated"],
                    "securityContext": {"privileged": True},
                }
            ],
        },
    }


def daemonset(name: str) -> dict[str, Any]:
    """A DaemonSet over every node, tolerating every taint, like an operand's."""
    labels = {"app": name, "sro.dev/owner": "bench"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [{"name": "operand", "image": "registry.example.com/operand:1.0"}],
                },
            },
        },
    }


async def run_daemonsets(client: kube.Kube, count: int, *, nodes: int) -> None:
    """Create ``count`` DaemonSets and wait until each has a Ready pod on all ``nodes``."""
    path = f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets"
    for i in range(count):
        await client.create(path, daemonset(f"operand-{i}"))
    deadline = time.monotonic() + DAEMONSETS_READY
    while True:
        found = (await client.get(path))["items"]
        ready = sum(1 for d in found if (d.get("status") or {}).get("numberReady", 0) >= nodes)
        if ready == count:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{ready} of {count} DaemonSets Ready on {nodes} nodes after {DAEMONSETS_READY:g}s"
            )
        await asyncio.sleep(1.0)


def per_write(
    spent: dict[str, float], idle: dict[str, float], *, seconds: float, idle_seconds: float, writes: int
) -> dict[str, float]:
    """Milliseconds of CPU per write by process: ``spent`` in ``seconds``, less the idle
    rate (``idle`` in ``idle_seconds``) over as long, never below zero."""
    out = {}
    for name, cpu in spent.items():
        rate = idle.get(name, 0.0) / idle_seconds if idle_seconds > 0 else 0.0
        out[name] = max(cpu - rate * seconds, 0.0) * 1000 / writes
    return out


async def _window(run: layout.RunDir, work: Callable[[], Awaitable[None]]) -> tuple[dict[str, float], float]:
    before, started = daemons.cpu_by_name(run.pids), time.monotonic()
    await work()
    await asyncio.sleep(SETTLE)
    return daemons.cpu_by_name(run.pids, before), time.monotonic() - started


async def measure(
    run: layout.RunDir, *, writes: int, concurrency: int, daemonsets: int = 0
) -> dict[str, dict[str, float]]:
    state = controlplane.State.load(run)
    assert state is not None
    limit = asyncio.Semaphore(concurrency)
    async with kube.Kube(server=state.server, run=run) as client:
        await client.create(
            "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
        nodes = sorted(
            n["metadata"]["name"] for n in (await client.get("/api/v1/nodes", request_seconds=120))["items"]
        )
        if daemonsets:
            await run_daemonsets(client, daemonsets, nodes=len(nodes))
            print(f"{daemonsets} DaemonSets Ready on {len(nodes)} nodes", flush=True)

        async def each(send: Callable[[int], Awaitable[Any]], *, first: int = 0, count: int = writes) -> None:
            async def one(i: int) -> None:
                async with limit:
                    await send(i)

            await asyncio.gather(*(one(i) for i in range(first, first + count)))

        def label(i: int, kind: str) -> tuple[str, str]:
            return nodes[i % len(nodes)], f"bench.sro.dev/{kind}-{i // len(nodes)}"

        async def merge(i: int) -> Any:
            node, key = label(i, "merge")
            return await client.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {key: "ready"}}})

        async def apply_node(i: int) -> Any:
            node, key = label(i, "apply")
            body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": {key: "ready"}}}
            return await client.request(
                "PATCH", f"/api/v1/nodes/{node}?fieldManager=bench&force=true", body=body, content_type=APPLY
            )

        async def apply_pod(i: int) -> Any:
            path = f"/api/v1/namespaces/{NAMESPACE}/pods/apply-{i}?fieldManager=bench&force=true"
            return await client.request("PATCH", path, body=pod(f"apply-{i}"), content_type=APPLY)

        kinds: dict[str, Callable[[int], Awaitable[Any]]] = {
            "POST pod": lambda i: client.create(f"/api/v1/namespaces/{NAMESPACE}/pods", pod(f"post-{i}")),
            "apply pod": apply_pod,
            "merge-patch node label": merge,
            "apply node label": apply_node,
        }
        figures: dict[str, dict[str, float]] = {}
        try:
            for send in kinds.values():  # warm up: the first writes of a kind cost the most
                await each(send, first=writes, count=WARM_UP)
            for name, send in kinds.items():
                idle, idle_seconds = await _window(run, lambda: asyncio.sleep(SETTLE))
                spent, seconds = await _window(run, functools.partial(each, send))
                figures[name] = per_write(
                    spent, idle, seconds=seconds, idle_seconds=idle_seconds, writes=writes
                )
                print(f"{name}: {writes} writes, {sum(figures[name].values()):.2f} ms CPU each", flush=True)
        finally:
            await client.delete(f"/api/v1/namespaces/{NAMESPACE}")
    return figures


def table(figures: dict[str, dict[str, float]]) -> str:
    floor = sum(figures["POST pod"].values())
    names = sorted({n for f in figures.values() for n in f})
    head = f"{'write':24} {'ms CPU':>7} {'x floor':>8}  " + " ".join(f"{n[:10]:>10}" for n in names)
    rows = [head]
    for kind, by in figures.items():
        total = sum(by.values())
        cells = " ".join(f"{by.get(n, 0.0):10.2f}" for n in names)
        rows.append(f"{kind:24} {total:7.2f} {total / floor:7.2f}x  {cells}")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="hack/bench writes", description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=200)
    p.add_argument("--writes", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--daemonsets", type=int, default=0, help="DaemonSets over every node, running first")
    args = p.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="sro-writes-"))
    run = layout.RunDir(base / "cluster")
    stopping.install()  # a stopped run unwinds through the cluster's teardown
    try:
        converge.hack_cluster(run, "up", "--nodes", str(args.nodes))
        figures = asyncio.run(
            measure(run, writes=args.writes, concurrency=args.concurrency, daemonsets=args.daemonsets)
        )
    finally:
        converge.hack_cluster(run, "down")
        shutil.rmtree(base, ignore_errors=True)
    print()
    print(table(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
