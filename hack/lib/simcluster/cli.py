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
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml

from simcluster import (
    audit,
    cli_args,
    controlplane,
    daemons,
    devsim,
    inventory,
    kube,
    layout,
    nodes,
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


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "up": cmd_up,
    "env": cmd_env,
    "status": cmd_status,
    "nodes": cmd_nodes,
    "kernel": cmd_kernel,
    "restart": cmd_restart,
    "compact": cmd_compact,
    "down": cmd_down,
    "logs": cmd_logs,
    "audit": cmd_audit,
    "missing-image": cmd_missing_image,
    "inventory": cmd_inventory,
    "devsim": cmd_devsim,
}
"""Each subcommand of ``cli_args.parser`` and the function that runs it."""


def main(argv: list[str]) -> int:
    args = cli_args.parser(description=__doc__).parse_args(argv)
    try:
        return int(COMMANDS[args.command](args))
    except (controlplane.ClusterError, inventory.InventoryError, kube.ApiError, TimeoutError) as e:
        say(f"hack/cluster {args.command}: {e}")
        return 1
    except json.JSONDecodeError as e:
        say(f"hack/cluster {args.command}: {e}")
        return 1
