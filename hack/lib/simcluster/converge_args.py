"""The options of ``hack/bench converge``: the cluster's size, what is measured beside the
convergence (idle, a blink, kernel changes, a restart), profiles, and repeated runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from simcluster import layout, pod_logs


def parser(*, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hack/bench converge", description=description)
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--kernels", type=int, default=4)
    p.add_argument("--idle", type=float, default=60, help="seconds of idle measured after Ready")
    p.add_argument(
        "--blink",
        type=float,
        default=0,
        metavar="SECONDS",
        help="pause the simulated kubelets (kwok and devsim) this long at the start of the idle window: "
        "past the node controller's 200 s grace period every node goes NotReady and back "
        "(converge_idle)",
    )
    p.add_argument("--kernel-changes", type=int, default=10)
    p.add_argument(
        "--no-restart",
        dest="restart",
        action="store_false",
        help="skip restarting the operator after Ready (and counting what the new process writes)",
    )
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--out", type=Path, default=layout.HACK.parent / ".run" / "bench-converge")
    p.add_argument("--profile", action="store_true", help="sample the operator with py-spy while converging")
    p.add_argument(
        "--profile-memory",
        action="store_true",
        help="run the operator under memray (aggregated: what is live at its peak) and print the "
        "allocation sites that held the most at its peak (operator.memray; it slows the operator)",
    )
    p.add_argument(
        "--profile-control-plane",
        action="store_true",
        help="take kube-apiserver's CPU profile over the floor and over sro's convergence "
        "(floor-apiserver.pprof, sro-apiserver.pprof; read with go tool pprof) and print their tops",
    )
    p.add_argument(
        "--labelled-floor",
        action="store_true",
        help="run the floor a second time with each node's label per state (and complete) "
        "patched besides, in the fewest patches the order of states allows (one per step of "
        "the longest chain): what the contract's node writes cost on their own",
    )
    p.add_argument("--keep", action="store_true", help="leave the cluster running")
    p.add_argument(
        "--runs",
        type=int,
        default=1,
        help="run it all this many times, each on a new cluster, and print the median ratio: the "
        "simulator's random pulls move one run's ratio by a fifth either way",
    )
    p.add_argument(
        "--pod-gc-threshold",
        type=int,
        default=0,
        help="finished pods before the pod garbage collector deletes the oldest (default 12,500): "
        "lower, it collects validation pods while sro converges, as on a cluster full of finished Jobs",
    )
    pod_logs.add_build_seconds(
        p,
        help="how long each driver builds after it starts before it prints its ready line (hack/cluster "
        "up --build-seconds; default 1-4): the floor counts a driver done at its build's end, as sro must",
    )
    p.add_argument(
        "--skip-floor",
        action="store_true",
        help="measure sro alone (no ratio): for sizes whose floor takes long",
    )
    return p
