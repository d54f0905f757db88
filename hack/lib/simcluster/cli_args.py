"""The options of ``hack/cluster``, one subcommand each (``cli`` runs them)."""

from __future__ import annotations

import argparse

from simcluster import controlplane, pod_logs


def parser(*, description: str | None) -> argparse.ArgumentParser:
    """``hack/cluster``'s options; ``command`` names the subcommand (``cli.COMMANDS``)."""
    p = argparse.ArgumentParser(prog="hack/cluster", description=description)
    sub = p.add_subparsers(dest="command", required=True)

    up = sub.add_parser("up", help="start a control plane and simulated nodes (idempotent)")
    up.add_argument(
        "--nodes", type=int, help="generate this many nodes (default: hack/inventory/default.yaml)"
    )
    up.add_argument("--kernels", type=int, help="how many kernels the generated nodes run (default 3)")
    up.add_argument("--inventory", help="an inventory file (format: hack/inventory/example.yaml)")
    up.add_argument("--prefix", default="node", help="name prefix of generated nodes")
    up.add_argument("--pool", help="pool label of generated nodes (default: per OS and vendor)")
    up.add_argument(
        "--pod-security",
        choices=controlplane.POD_SECURITY_LEVELS,
        help="configure kube-apiserver's PodSecurity admission to enforce (and audit and warn) this "
        "level in every namespace without its own pod-security.kubernetes.io labels, as a hardened "
        "cluster does (default: none, every namespace privileged)",
    )
    up.add_argument(
        "--pod-gc-threshold",
        type=int,
        default=0,
        help="finished pods the cluster holds before kube-controller-manager's pod garbage collector "
        "deletes the oldest (its --terminated-pod-gc-threshold; default: its own, 12,500)",
    )
    up.add_argument(
        "--profiling",
        action="store_true",
        help="kube-apiserver serves /debug/pprof (to cluster-admin), for CPU profiles of its work",
    )
    pod_logs.add_build_seconds(
        up,
        help="how long a known driver image (nvcr.io/nvidia/driver) builds after it starts, before it "
        "prints its ready line: each pod draws from this range, as real drivers take minutes (default "
        "1-4; 0 prints it at once; a pod's sim.sro.dev/build-seconds annotation overrides it)",
    )

    sub.add_parser("env", help="print export KUBECONFIG=... for the running cluster")
    sub.add_parser("status", help="show each component's pid and health")

    n = sub.add_parser("nodes", help="add or delete simulated nodes; prints the names added")
    n.add_argument("--inventory")
    n.add_argument("--count", type=int)
    n.add_argument("--kernels", type=int)
    n.add_argument("--prefix", default="node")
    n.add_argument("--pool")
    n.add_argument("--delete", nargs="+", metavar="NAME")

    k = sub.add_parser("kernel", help="move nodes to another kernel, as NFD reports after an upgrade")
    k.add_argument("node", nargs="+")
    k.add_argument("--to", required=True, metavar="VERSION")
    k.add_argument("--os", metavar="ID:VERSION_ID", help="also change the OS release, e.g. rhel:9.4")

    r = sub.add_parser("restart", help="restart one component")
    r.add_argument("component", choices=controlplane.COMPONENTS)

    c = sub.add_parser(
        "compact",
        help="compact etcd at its current revision and restart kube-apiserver (emptying its watch cache), "
        "so older resourceVersions answer 410 Gone; prints the revision",
    )
    c.add_argument(
        "--keep-cache", action="store_true", help="only compact etcd; do not restart kube-apiserver"
    )
    sub.add_parser("down", help="stop everything and remove the run directory")

    lg = sub.add_parser("logs", help="print a component's log")
    lg.add_argument("component", choices=controlplane.COMPONENTS)
    lg.add_argument("--tail", type=int, default=0)

    a = sub.add_parser(
        "audit",
        help="print the path of kube-apiserver's audit log: every create, update, patch, delete and "
        "deletecollection at Metadata level, one JSON event per line, never rotated (reads and node "
        "Lease heartbeats are not logged)",
    )
    a.add_argument("--summary", action="store_true", help="count the writes by user, verb and resource")

    m = sub.add_parser("missing-image", help="images the simulated registry does not have (glob patterns)")
    m.add_argument("action", choices=("add", "remove", "list", "clear"))
    m.add_argument("pattern", nargs="*")

    i = sub.add_parser("inventory", help="print a generated inventory")
    i.add_argument("--nodes", type=int, required=True)
    i.add_argument("--kernels", type=int, default=3)
    i.add_argument("--prefix", default="node")
    i.add_argument("--pool")

    sub.add_parser("devsim")  # internal: the simulator helper
    return p
