#!/usr/bin/env python3
"""How long ``sro status NAME`` takes on a large cluster, start to last line; prints, asserts nothing.

    hack/bench status [--nodes 1000] [--repeat 5] [--keep]

Uses the cluster ``SRO_CLUSTER_DIR`` names (default .run/cluster), adding simulated nodes
until it has ``--nodes``. It then puts a converged SpecialResource there the way sro leaves
one, without running the operator (what ``sro status`` reads is the same either way): the
CRD, a SpecialResource ``status-bench`` of the nvidia-gpu recipe with no nodeSelector (so
every node is listed, the slow path), its status (seven states, one of them failing on one
node), and on every node the state labels, the ``complete`` label and the kernel-group
annotation sro writes. Each run is a fresh process (``sro status``, Python start-up and
imports included), as an administrator types it; the figures are the median and the best
of ``--repeat`` runs, and the CPU seconds the process used (on a loaded machine the
wall time is mostly waiting for a CPU), for the table, ``-o wide`` and ``-o json``, then the same through
``kubectl sro status`` (the cluster's kubectl, finding the venv's ``kubectl-sro``).
Everything it made is removed at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from sro import settings
from sro.kube import http

REPO = Path(__file__).resolve().parents[2]
CLUSTER_DIR = Path(os.environ.get("SRO_CLUSTER_DIR") or REPO / ".run" / "cluster")
KUBECONFIG = str(CLUSTER_DIR / "kubeconfig")
SRO = REPO / ".venv" / "bin" / "sro"
NAME = "status-bench"
STATES = (
    "state-driver",
    "state-driver-validation",
    "state-device-plugin",
    "state-device-plugin-validation",
    "state-monitoring",
    "state-feature-discovery",
    "state-grafana",
)
KERNEL = "5.14.0-427.13.1.el9_4.x86_64|rhel9.4"
SR_PATH = "/apis/sro.dev/v1alpha1/specialresources"


def kubectl(*args: str, stdin: str | None = None) -> str:
    binary = CLUSTER_DIR / "bin" / "kubectl"
    proc = subprocess.run(
        [str(binary), f"--kubeconfig={KUBECONFIG}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def ensure_nodes(count: int) -> int:
    have = len(kubectl("get", "nodes", "-o", "name").split())
    if have < count:
        env = {**os.environ, "SRO_CLUSTER_DIR": str(CLUSTER_DIR)}
        subprocess.run(
            [
                str(REPO / "hack" / "cluster"),
                "nodes",
                "--count",
                str(count - have),
                "--prefix",
                "status-bench",
            ],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return len(kubectl("get", "nodes", "-o", "name").split())


def status_body(nodes: list[str]) -> dict[str, Any]:
    broken = nodes[0]
    total = len(nodes)
    rows = []
    for state in STATES:
        failing = state == "state-driver-validation"
        later = STATES.index(state) > STATES.index("state-driver-validation")
        rows.append(
            {
                "name": state,
                "phase": "Failed" if failing else "Progressing" if later else "Complete",
                "nodes": {"complete": total - 1 if failing or later else total, "total": total},
                "message": "failed on 1 node" if failing else "",
                "failingNodes": [{"node": broken, "reason": "Error (exit code 1)"}] if failing else [],
            }
        )
    return {
        "observedGeneration": 1,
        "state": f"Degraded: StateFailed on 1 node ({broken}: Error (exit code 1))",
        "phase": "Degraded",
        "ready": f"{total - 1}/{total}",
        "conditions": [],
        "recipe": {"name": "nvidia-gpu", "source": "built-in"},
        "nodes": {"selected": total, "complete": total - 1},
        "kernels": [{"kernel": KERNEL.split("|", maxsplit=1)[0], "os": "rhel9.4", "nodes": total}],
        "states": rows,
    }


async def label(api: http.Api, nodes: list[str], *, remove: bool) -> None:
    broken = nodes[0]
    gate = asyncio.Semaphore(32)

    async def one(node: str) -> None:
        ready = STATES[:1] if node == broken else STATES
        labels: dict[str, str | None] = {f"{NAME}.sro.dev/{s}": None if remove else "ready" for s in ready}
        labels[f"{NAME}.sro.dev/complete"] = None if remove or node == broken else "true"
        patch = {
            "metadata": {
                "labels": labels,
                "annotations": {f"sro.dev/kernel.{NAME}": None if remove else KERNEL},
            }
        }
        async with gate:
            await api.request(
                "PATCH", f"/api/v1/nodes/{node}", body=patch, content_type=http.MERGE_PATCH, resource="nodes"
            )

    await asyncio.gather(*(one(n) for n in nodes))


async def setup(nodes: list[str]) -> None:
    kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        str(REPO / "manifests/crd/sro.dev_specialresources.yaml"),
    )
    kubectl("wait", "--for=condition=Established", "crd/specialresources.sro.dev", "--timeout=60s")
    body = {
        "apiVersion": "sro.dev/v1alpha1",
        "kind": "SpecialResource",
        "metadata": {"name": NAME},
        "spec": {},
    }
    kubectl("apply", "-f", "-", stdin=json.dumps(body))
    async with await http.Api.connect(settings.ApiSettings(kubeconfig=KUBECONFIG)) as api:
        await api.request(
            "PATCH",
            f"{SR_PATH}/{NAME}/status",
            body={"status": status_body(nodes)},
            content_type=http.MERGE_PATCH,
            resource="specialresources",
        )
        await label(api, nodes, remove=False)


async def teardown(nodes: list[str]) -> None:
    async with await http.Api.connect(settings.ApiSettings(kubeconfig=KUBECONFIG)) as api:
        await label(api, nodes, remove=True)
    kubectl("delete", "sr", NAME, "--ignore-not-found")


def timed(command: list[str], repeat: int) -> tuple[float, float, float, int]:
    """Median and best wall seconds, median CPU seconds of the process (user + system: what
    the figure would be on an idle machine, less the API server's time), and lines printed."""
    # kubectl finds plugins on PATH: the venv's kubectl-sro entry point.
    env = {**os.environ, "KUBECONFIG": KUBECONFIG, "PATH": f"{SRO.parent}:{os.environ.get('PATH', '')}"}
    took, cpu = [], []
    lines = 0
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        proc = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        took.append(time.monotonic() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        lines = len(proc.stdout.splitlines())
    return statistics.median(took), min(took), statistics.median(cpu), lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="leave the SpecialResource and labels in place")
    args = parser.parse_args()
    count = ensure_nodes(args.nodes)
    nodes = sorted(kubectl("get", "nodes", "-o", "jsonpath={.items[*].metadata.name}").split())
    asyncio.run(setup(nodes))
    print(f"cluster {CLUSTER_DIR}: {count} nodes, SpecialResource {NAME} on every one of them")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'command':<28} {'median s':>9} {'best s':>8} {'CPU s':>6} {'lines':>6}")
    commands = [
        ("sro status NAME", [str(SRO), "status", NAME]),
        ("sro status NAME -o wide", [str(SRO), "status", NAME, "-o", "wide"]),
        ("sro status NAME -o json", [str(SRO), "status", NAME, "-o", "json"]),
    ]
    if (SRO.parent / "kubectl-sro").exists():
        commands.append(
            ("kubectl sro status NAME", [str(CLUSTER_DIR / "bin" / "kubectl"), "sro", "status", NAME])
        )
    try:
        for label_, command in commands:
            median, best, cpu, lines = timed(command, args.repeat)
            print(f"{label_:<28} {median:>9.2f} {best:>8.2f} {cpu:>6.2f} {lines:>6}")
    finally:
        if not args.keep:
            asyncio.run(teardown(nodes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
