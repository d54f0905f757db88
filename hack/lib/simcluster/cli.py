"""``hack/cluster``: the command line of the local control plane with simulated nodes.

Messages go to stderr; stdout carries only what scripts read (``env``'s export line,
the names ``nodes`` created), so ``$(hack/cluster env)`` and friends just work.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

from simcluster import (
    audit,
    controlplane,
    daemons,
    devsim,
    inventory,
    kube,
    layout,
    nodes,
    pod_logs,
    provision,
)

DEFAULT_INVENTORY = layout.HACK / "inventory" / "default.yaml"


def say(*args: object) -> None:
    print(*args, file=sys.stderr, flush=True)


def _run_dir() -> layout.RunDir:
    return layout.RunDir(layout.default_run_dir())


@contextlib.contextmanager
def _exclusive(run: layout.RunDir) -> Iterator[None]:
    """Serialises ``up`` and ``down`` on one run directory (two test sessions may race)."""
    lock = run.root.with_name(run.root.name + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _require_running(run: layout.RunDir) -> controlplane.State:
    state = controlplane.State.load(run)
    if state is None or not controlplane.running(run):
        raise controlplane.ClusterError(f"no cluster running in {run.root} (hack/cluster up)")
    return state


def _specs(args: argparse.Namespace) -> list[inventory.NodeSpec]:
    if getattr(args, "inventory", None):
        return inventory.load(Path(args.inventory).read_text(), file=str(args.inventory))
    count = getattr(args, "nodes", None) or getattr(args, "count", None)
    if count:
        kernels = args.kernels or 3
        return inventory.parse(
            inventory.generate(nodes=count, kernels=kernels, prefix=args.prefix or "node", pool=args.pool)
        )
    return inventory.load(DEFAULT_INVENTORY.read_text(), file=str(DEFAULT_INVENTORY))


async def _add_nodes(
    run: layout.RunDir, state: controlplane.State, specs: list[inventory.NodeSpec]
) -> list[str]:
    async with kube.Kube(server=state.server, run=run) as client:
        start = time.monotonic()
        created, existing = await nodes.create(client, specs)
        took = time.monotonic() - start
        say(f"  {len(created)} nodes created, {len(existing)} already there, in {took:.1f}s")
        took = await nodes.wait_ready(client, [s.name for s in specs], max_seconds=60 + len(specs) * 0.1)
        say(f"  {len(specs)} nodes Ready after {took:.1f}s more")
    return [s.name for s in specs]


def _print_usage(run: layout.RunDir) -> None:
    say(f"""
cluster running in {run.root}
  export KUBECONFIG={run.kubeconfig}
  export PATH={run.bin}:$PATH      # kubectl {layout.versions()["KUBERNETES_VERSION"]}
  eval "$(hack/cluster env)"       # the same KUBECONFIG line
  hack/cluster down                # stop it and remove {run.root}""")


def cmd_up(args: argparse.Namespace) -> int:
    run = _run_dir()
    with _exclusive(run):
        return _up(
            run,
            _specs(args),
            pod_security=args.pod_security or "",
            pod_gc_threshold=args.pod_gc_threshold,
            profiling=args.profiling,
            build_seconds=args.build_seconds,
        )


def _up(
    run: layout.RunDir,
    specs: list[inventory.NodeSpec],
    *,
    pod_security: str = "",
    pod_gc_threshold: int = 0,
    profiling: bool = False,
    build_seconds: tuple[float, float] = controlplane.State.build_seconds,
) -> int:
    start = time.monotonic()
    if controlplane.running(run):
        state = controlplane.State.load(run)
        assert state is not None
        say(f"cluster already running in {run.root}")
        if pod_security and state.pod_security != pod_security:
            raise controlplane.ClusterError(
                f"it runs with --pod-security {state.pod_security or '(none)'}, not {pod_security}: "
                "hack/cluster down first"
            )
    else:
        if run.root.exists():
            say(f"removing the remains of an earlier cluster in {run.root}")
            controlplane.stop_all(run)
            controlplane.remove(run)
        build = subprocess.run([str(layout.HACK / "build")], stdout=sys.stderr, check=False)
        if build.returncode != 0:
            return build.returncode
        say(f"starting a control plane in {run.root}")
        state = controlplane.prepare(
            run,
            pod_security=pod_security,
            pod_gc_threshold=pod_gc_threshold,
            profiling=profiling,
            build_seconds=build_seconds,
        )
        try:
            controlplane.start_component(run, state, "etcd")
            controlplane.wait_healthy(run, state, ["etcd"])
            controlplane.start_component(run, state, "apiserver")
            controlplane.wait_healthy(run, state, ["apiserver"])
            asyncio.run(provision.bootstrap(run, state))
            rest = ["controller-manager", "scheduler", "kwok", "devsim"]
            for name in rest:
                controlplane.start_component(run, state, name)
            controlplane.wait_healthy(run, state, rest)
        except BaseException:
            say(f"start-up failed; stopping what was started (logs kept in {run.logs})")
            controlplane.stop_all(run)
            raise
    asyncio.run(_add_nodes(run, state, specs))
    say(f"up in {time.monotonic() - start:.1f}s")
    _print_usage(run)
    return 0


def cmd_env(args: argparse.Namespace) -> int:
    run = _run_dir()
    if not controlplane.running(run):
        say(f"no cluster running in {run.root}")
        return 1
    print(f"export KUBECONFIG={run.kubeconfig}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    run = _run_dir()
    state = controlplane.State.load(run)
    if state is None:
        say(f"no cluster in {run.root}")
        return 1
    ok = True
    for name in controlplane.COMPONENTS:
        record = daemons.load(run.pids, name)
        alive = record is not None and daemons.alive(record)
        healthy = alive and controlplane.health_check(run, state, name)()
        ok &= healthy
        pid = record.pid if record else "-"
        print(f"{name:20} pid {pid!s:8} {'healthy' if healthy else ('running' if alive else 'stopped')}")
    return 0 if ok else 1


def cmd_nodes(args: argparse.Namespace) -> int:
    run = _run_dir()
    state = _require_running(run)
    if args.delete:

        async def go() -> None:
            async with kube.Kube(server=state.server, run=run) as client:
                await nodes.delete(client, args.delete)
                await nodes.wait_gone(client, args.delete)

        asyncio.run(go())
        say(f"deleted {len(args.delete)} nodes")
        return 0
    if not (args.inventory or args.count):
        raise controlplane.ClusterError("nodes: give --inventory FILE, --count N or --delete NAME...")
    for name in asyncio.run(_add_nodes(run, state, _specs(args))):
        print(name)
    return 0


def cmd_kernel(args: argparse.Namespace) -> int:
    run = _run_dir()
    state = _require_running(run)
    os_id = os_version = None
    if args.os:
        os_id, _, os_version = args.os.partition(":")
        if not os_version:
            raise controlplane.ClusterError("--os takes ID:VERSION_ID, e.g. rhel:9.4")

    async def go() -> None:
        async with kube.Kube(server=state.server, run=run) as client:
            await asyncio.gather(
                *(
                    nodes.change_kernel(client, n, kernel=args.to, os_id=os_id, os_version=os_version)
                    for n in args.node
                )
            )

    asyncio.run(go())
    say(f"{len(args.node)} nodes now run kernel {args.to}")
    return 0


def cmd_restart(args: argparse.Namespace) -> int:
    run = _run_dir()
    state = controlplane.State.load(run)
    if state is None:
        raise controlplane.ClusterError(f"no cluster in {run.root}")
    name = args.component
    if name not in controlplane.COMPONENTS:
        raise controlplane.ClusterError(
            f"unknown component {name!r}; one of {', '.join(controlplane.COMPONENTS)}"
        )
    record = daemons.load(run.pids, name)
    start = time.monotonic()
    if record is not None:
        controlplane.stop(run, record)
    if name == "devsim":
        (run.root / "devsim.ready").unlink(missing_ok=True)
    if name == "kwok":
        # Each kwok process has a random identity and leaves nodes whose Lease another
        # identity holds alone until it expires (120 s): hand them over at once instead.
        asyncio.run(provision.release_node_leases(run, state))
    controlplane.start_component(run, state, name)
    controlplane.wait_healthy(run, state, [name])
    say(f"{name} restarted in {time.monotonic() - start:.1f}s")
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    run = _run_dir()
    state = _require_running(run)
    revision = controlplane.etcd_compact(state)
    say(f"etcd compacted at revision {revision}")
    if not args.keep_cache:
        # kube-apiserver's watch cache still serves revisions etcd has dropped; a restart
        # empties it, so a watch or list from before the compaction then answers 410 Gone.
        record = daemons.load(run.pids, "apiserver")
        if record is not None:
            controlplane.stop(run, record)
        controlplane.start_component(run, state, "apiserver")
        controlplane.wait_healthy(run, state, ["apiserver"])
    print(revision)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    run = _run_dir()
    with _exclusive(run):
        if not run.root.exists():
            say(f"nothing in {run.root}")
            return 0
        stopped = controlplane.stop_all(run)
        controlplane.remove(run)
    say(f"stopped {', '.join(stopped) or 'nothing'}; removed {run.root}")
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    run = _run_dir()
    path = run.logs / f"{args.component}.log"
    if not path.exists():
        raise controlplane.ClusterError(f"no log {path}")
    lines = path.read_text(errors="replace").splitlines()
    print("\n".join(lines[-args.tail :] if args.tail else lines))
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    run = _run_dir()
    if not args.summary:
        print(run.audit_log)
        return 0
    counts = audit.count_by(
        audit.read(run.audit_log), key=lambda w: (w.user, w.verb, w.resource, w.subresource)
    )
    for (user, verb, resource, sub), n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))):
        print(f"{n:8d} {user} {verb} {resource}{'/' + sub if sub else ''}")
    return 0


def cmd_missing_image(args: argparse.Namespace) -> int:
    run = _run_dir()
    state = _require_running(run)
    ns, name = devsim.MISSING_IMAGES
    path = f"/api/v1/namespaces/{ns}/configmaps/{name}"

    async def go() -> list[str]:
        async with kube.Kube(server=state.server, run=run) as client:
            patterns = devsim.missing_patterns(await client.get(path))
            if args.action == "add":
                patterns += [p for p in args.pattern if p not in patterns]
            elif args.action == "remove":
                patterns = [p for p in patterns if p not in args.pattern]
            elif args.action == "clear":
                patterns = []
            if args.action != "list":
                await client.patch(path, {"data": {"patterns": "\n".join(patterns)}})
            return patterns

    for p in asyncio.run(go()):
        print(p)
    return 0


def cmd_inventory(args: argparse.Namespace) -> int:
    data = inventory.generate(nodes=args.nodes, kernels=args.kernels, prefix=args.prefix, pool=args.pool)
    print(yaml.safe_dump(data, sort_keys=False), end="")
    return 0


def cmd_devsim(args: argparse.Namespace) -> int:
    return devsim.main()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hack/cluster", description=__doc__)
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
    up.set_defaults(func=cmd_up)

    sub.add_parser("env", help="print export KUBECONFIG=... for the running cluster").set_defaults(
        func=cmd_env
    )
    sub.add_parser("status", help="show each component's pid and health").set_defaults(func=cmd_status)

    n = sub.add_parser("nodes", help="add or delete simulated nodes; prints the names added")
    n.add_argument("--inventory")
    n.add_argument("--count", type=int)
    n.add_argument("--kernels", type=int)
    n.add_argument("--prefix", default="node")
    n.add_argument("--pool")
    n.add_argument("--delete", nargs="+", metavar="NAME")
    n.set_defaults(func=cmd_nodes)

    k = sub.add_parser("kernel", help="move nodes to another kernel, as NFD reports after an upgrade")
    k.add_argument("node", nargs="+")
    k.add_argument("--to", required=True, metavar="VERSION")
    k.add_argument("--os", metavar="ID:VERSION_ID", help="also change the OS release, e.g. rhel:9.4")
    k.set_defaults(func=cmd_kernel)

    r = sub.add_parser("restart", help="restart one component")
    r.add_argument("component", choices=controlplane.COMPONENTS)
    r.set_defaults(func=cmd_restart)

    c = sub.add_parser(
        "compact",
        help="compact etcd at its current revision and restart kube-apiserver (emptying its watch cache), "
        "so older resourceVersions answer 410 Gone; prints the revision",
    )
    c.add_argument(
        "--keep-cache", action="store_true", help="only compact etcd; do not restart kube-apiserver"
    )
    c.set_defaults(func=cmd_compact)
    sub.add_parser("down", help="stop everything and remove the run directory").set_defaults(func=cmd_down)

    lg = sub.add_parser("logs", help="print a component's log")
    lg.add_argument("component", choices=controlplane.COMPONENTS)
    lg.add_argument("--tail", type=int, default=0)
    lg.set_defaults(func=cmd_logs)

    a = sub.add_parser(
        "audit",
        help="print the path of kube-apiserver's audit log: every create, update, patch, delete and "
        "deletecollection at Metadata level, one JSON event per line, never rotated (reads and node "
        "Lease heartbeats are not logged)",
    )
    a.add_argument("--summary", action="store_true", help="count the writes by user, verb and resource")
    a.set_defaults(func=cmd_audit)

    m = sub.add_parser("missing-image", help="images the simulated registry does not have (glob patterns)")
    m.add_argument("action", choices=("add", "remove", "list", "clear"))
    m.add_argument("pattern", nargs="*")
    m.set_defaults(func=cmd_missing_image)

    i = sub.add_parser("inventory", help="print a generated inventory")
    i.add_argument("--nodes", type=int, required=True)
    i.add_argument("--kernels", type=int, default=3)
    i.add_argument("--prefix", default="node")
    i.add_argument("--pool")
    i.set_defaults(func=cmd_inventory)

    sub.add_parser("devsim").set_defaults(func=cmd_devsim)  # internal: the simulator helper
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (controlplane.ClusterError, inventory.InventoryError, kube.ApiError, TimeoutError) as e:
        say(f"hack/cluster {args.command}: {e}")
        return 1
    except json.JSONDecodeError as e:
        say(f"hack/cluster {args.command}: {e}")
        return 1
