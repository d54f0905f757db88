"""``hack/bench converge``: how close sro comes to the speed of the control plane.

One run, one cluster (in its own run directory), two measurements of the same work:

1. the floor (``converge_floor_phase``): the objects ``sro render --live`` prints for
   the nvidia-gpu SpecialResource, ordering taken out, posted at once; timed to every pod
   Ready or Succeeded, and each driver to the end of its build (``--build-seconds``: the
   simulated driver prints its ready line then, as a real one does minutes after it turns
   Ready, and sro waits for that line); then removed (``--labelled-floor``: once more, with the contract's
   node label writes besides);
2. sro (``converge_sro``): ``sro run`` converging that SpecialResource, timed to Ready,
   with per-state progress, each node's chain of steps split by who took the time
   (``converge_steps``), CPU, peak RSS and requests; then an idle window (with the
   passes run and the watch events read in it: what woke the operator), then kernel
   changes one node at a time (new per-kernel DaemonSet, node complete again).

Prints a table, writes ``converge.json`` and ``converge.png`` (matplotlib) to ``--out``,
and with ``--profile`` samples the operator with py-spy while it converges (every thread,
while it holds the GIL: where its CPU goes) and prints its top entries
(``--profile-control-plane``: kube-apiserver's, with ``pprof``). It asserts
nothing: the targets are for people to read beside the figures.
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
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from simcluster import (
    audit,
    controlplane,
    converge_args,
    converge_floor,
    converge_floor_phase,
    converge_idle,
    converge_output,
    converge_report,
    converge_sro,
    converge_steps,
    daemons,
    kube,
    layout,
    pprof,
    stopping,
)
from sro.render import recipe as recipe_

REPO = layout.HACK.parent
SRO = REPO / ".venv" / "bin" / "sro"
RECIPE = REPO / "assets" / "nvidia-gpu"
SAMPLE = REPO / "manifests" / "samples" / "nvidia-gpu.yaml"
CRD = REPO / "manifests" / "crd" / "sro.dev_specialresources.yaml"


def inventory(nodes: int, kernels: int) -> dict[str, Any]:
    """``nodes`` NVIDIA GPU nodes spread over ``kernels`` RHEL 9.4 kernels."""
    pools = []
    for k in range(kernels):
        count = nodes // kernels + (1 if k < nodes % kernels else 0)
        if count:
            pools.append(
                {
                    "name": f"bench-gpu-k{k}",
                    "prefix": f"gpu-k{k}",
                    "count": count,
                    "kernel": f"5.14.0-427.{10 + k}.1.el9_4.x86_64",
                    "os": {"id": "rhel", "versionId": "9.4"},
                    "pci": ["10de"],
                    "devices": {"nvidia.com/gpu": 8},
                }
            )
    return {"pools": pools}


def hack_cluster(run: layout.RunDir, *args: str) -> None:
    env = {**os.environ, "SRO_CLUSTER_DIR": str(run.root)}
    subprocess.run([str(layout.HACK / "cluster"), *args], env=env, check=True)


def revision() -> str:
    proc = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
        check=False,
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip() or "unknown"


def states_of(recipe: Path) -> list[str]:
    return [s["name"] for s in yaml.safe_load((recipe / "recipe.yaml").read_text())["states"]]


def states_after(recipe: Path) -> dict[str, tuple[str, ...]]:
    """Each state's predecessors, as sro reads the recipe (a state without ``after``
    comes after the one before it)."""
    return {s.name: s.after for s in recipe_.load_directory(recipe).states}


POD_GC_USER = "system:serviceaccount:kube-system:pod-garbage-collector"


def pod_creations(writes: list[audit.Write]) -> dict[str, Any]:
    """Of the pods sro made (``writes``: everyone's, in order): how many it made again
    after someone deleted them (each per-node pod is made once per node and state unless
    something reset that state there), and how many creating applies were repeated with
    no deletion between (a second apply of a pod just made; the API server answers the
    racing second one 201 as well). Also the pods sro deleted, and those the pod garbage
    collector did (the oldest finished pods, past its threshold): each of those is a
    finished per-node pod sro must not take for one that never ran. Pods made again are
    also counted by who deleted them (``pods_created_again_by``: a pod evicted before it
    finished is rightly made again; one the collector took after it succeeded is not):
    by who asked for the deletion, not by the simulated kubelet that finished it."""
    again = repeated = deleted = collected = 0
    made: set[str] = set()  # made and not deleted since
    seen_before: set[str] = set()  # made at some time
    deleter: dict[str, str] = {}  # pod -> who asked for its last deletion
    again_by: Counter[str] = Counter()
    for w in writes:
        if w.resource != "pods" or w.subresource or w.dry_run:
            continue  # a dry run (a state's first writes are tried so first) makes nothing
        if w.verb == "delete" and w.succeeded:
            if w.name in made:  # the delete that began it: a graceful one is finished by another
                deleter[w.name] = "sro" if w.by_sro else w.user
            made.discard(w.name)
            deleted += w.by_sro
            collected += w.user == POD_GC_USER
        elif w.by_sro and w.code == 201:
            if w.name in made:
                repeated += 1
            elif w.name in seen_before:
                again += 1
                again_by[deleter.get(w.name, "(unknown)")] += 1
            made.add(w.name)
            seen_before.add(w.name)
    return {
        "pods_created_again": again,
        "pods_created_again_by": dict(again_by),
        "pod_applies_repeated": repeated,
        "pods_deleted_by_sro": deleted,
        "pods_collected": collected,
    }


async def measure(args: argparse.Namespace, run: layout.RunDir, out: Path) -> dict[str, Any]:
    state = controlplane.State.load(run)
    assert state is not None
    sr_body = yaml.safe_load(SAMPLE.read_text())
    sr_file = out / "sr.yaml"
    sr_file.write_text(yaml.safe_dump(sr_body))
    figures: dict[str, Any] = {
        "revision": revision(),
        "nodes": args.nodes,
        "kernels": args.kernels,
        "build_seconds": list(args.build_seconds),
    }
    profiles = out if args.profile_control_plane else None
    after = states_after(RECIPE)  # each state's predecessors, read from the recipe once
    async with kube.Kube(server=state.server, run=run) as client:
        if not args.skip_floor:
            figures["floor"] = await converge_floor_phase.floor(
                client,
                run,
                sr_file,
                sro=SRO,
                recipe=RECIPE,
                after=after,
                within=args.timeout,
                profile=profiles,
                labelled=args.labelled_floor,
            )
            objects = figures["floor"]["objects"]
        else:  # what sro will write is still what it renders: the floor of writes needs it
            rendered = converge_floor.rendered_objects(
                sro=SRO, recipe=RECIPE, sr_file=sr_file, kubeconfig=run.kubeconfig
            )
            objects = len(rendered)
        operator = converge_sro.Operator(sro=SRO, kubeconfig=run.kubeconfig, log=out / "operator.log")
        if args.profile_memory:
            operator.memory = out / "operator.memray"
        operator.start()
        try:
            await operator.wait_ready()
            if args.profile:
                operator.profile(out / "operator.spy")
            first = operator.scrape()
            cpu0 = operator.cpu_seconds()  # after the read of /metrics, which costs it CPU
            plane0 = daemons.cpu_by_name(run.pids)
            started_wall = time.time()
            states = states_of(RECIPE)
            chain = converge_steps.Steps(after=after)
            phases: dict[str, float] = {}
            try:
                async with converge_floor_phase.apiserver_profile(client, out=profiles, name="sro"):
                    seconds, curves = await converge_sro.converge(
                        client,
                        sr_body,
                        states=states,
                        total=args.nodes,
                        within=args.timeout,
                        steps=chain,
                        phases=phases,
                    )
            except converge_sro.NotReady as exc:  # say how far it got, then fail
                print(f"sro: {exc}", flush=True)
                figures["not_ready"] = str(exc)
                seconds, curves = args.timeout, exc.curves
            ready_wall = time.time()
            plane = daemons.cpu_by_name(run.pids, plane0)
            operator.profiled()
            cpu = operator.cpu_seconds() - cpu0
            last = operator.scrape()
            during = converge_sro.diff(last.requests(), first.requests())
            steps0 = first.step_seconds()
            steps = {
                step: (spent - steps0.get(step, (0.0, 0))[0], passes - steps0.get(step, (0.0, 0))[1])
                for step, (spent, passes) in last.step_seconds().items()
            }
            stalls0, collections0 = first.stalls(), first.collections()
            window = [
                w for w in audit.read(run.audit_log) if started_wall <= w.time.timestamp() <= ready_wall
            ]
            writes = [w for w in window if w.by_sro]
            figures["sro"] = {
                "seconds": seconds,
                "cpu_seconds": cpu,
                # the machine is shared: what the control plane spent on sro's work
                "control_plane_cpu": plane,
                "peak_rss_mb": operator.peak_rss_mb(),
                "requests": sum(during.values()),
                "requests_non_watch": converge_sro.non_watch(during),
                "requests_by": {f"{v} {r}": n for (v, r), n in during.items()},
                "audit_writes": len(writes),
                "audit_writes_by": audit.tally(writes),
                # What any correct operator writes at least: each object once, each
                # node's labels in one patch per step of its longest chain of states, and
                # the SpecialResource's taints on each node as it is selected, before any
                # state has run there (status writes not counted).
                "write_floor": objects + args.nodes * converge_floor.node_writes(after, sr=sr_body),
                "curves": curves,
                # seconds in each phase of its status: Degraded while converging is a false alarm
                "phases": {k: round(v, 1) for k, v in sorted(phases.items())},
                "chain": chain.figures(),
                "steps": {step: {"seconds": s, "passes": n} for step, (s, n) in steps.items()},
                # what the operator read while converging: its CPU is mostly theirs
                **last.streams_since(first),
                # the event loop kept from reading: what makes the API server drop a watcher
                "loop_stalls": {k: v - stalls0.get(k, 0.0) for k, v in last.stalls().items()},
                # whether those stalls were the garbage collector's
                "collections": {
                    gen: {k: v - collections0.get(gen, {}).get(k, 0.0) for k, v in now.items()}
                    for gen, now in last.collections().items()
                },
                "watch_restarts": last.restarts_since(first),
                **pod_creations(window),
            }
            if "not_ready" in figures:
                return figures
            if "floor" in figures:
                figures["ratio"] = seconds / figures["floor"]["seconds"]
                if "labelled" in figures["floor"]:
                    figures["labelled_ratio"] = seconds / figures["floor"]["labelled"]["seconds"]
                print(f"sro: Ready in {seconds:.1f}s ({figures['ratio']:.2f}x the floor)", flush=True)
            else:
                print(f"sro: Ready in {seconds:.1f}s", flush=True)
            if args.idle > 0 or args.blink > 0:
                if args.profile:  # what the idle CPU goes to, apart from the convergence's
                    operator.profile(out / "operator-idle.spy")
                figures["idle"] = await converge_idle.window(
                    operator, run=run, client=client, seconds=args.idle, blink_seconds=args.blink,
                    within=args.timeout,
                )  # fmt: skip
                operator.profiled()
            if args.restart:
                figures["restart"] = await converge_sro.restart(
                    operator, audit_log=run.audit_log, within=args.timeout
                )
            samples = []
            listed = await client.get("/api/v1/nodes", request_seconds=120)
            names = sorted(n["metadata"]["name"] for n in listed["items"])
            sr_name = sr_body["metadata"]["name"]
            daemonsets = converge_sro.KernelDaemonSets(client, sr=sr_name)
            try:
                for i in range(args.kernel_changes):
                    node = names[i % len(names)]
                    kernel = f"5.14.0-503.{i}.1.el9_4.x86_64"
                    samples.append(
                        await converge_sro.kernel_change(
                            client, daemonsets, sr=sr_name, node=node, kernel=kernel, within=args.timeout
                        )
                    )
            finally:
                await daemonsets.stop()
            figures["kernel_changes"] = converge_report.kernel_figures(samples)
        finally:
            code = operator.stop()
            print(f"sro run stopped (exit {code}); log: {operator.log}", flush=True)
            if args.profile_memory:
                print(f"\nwhat sro run held at its peak ({operator.memory}):", flush=True)
                print(operator.memory_top(), flush=True)
    return figures


def main(argv: list[str]) -> int:
    args = converge_args.parser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    out = args.out.resolve()
    if args.runs <= 1:
        return 1 if "not_ready" in _run(args, out) else 0
    runs = [_run(args, out / f"run-{i}") for i in range(1, args.runs + 1)]
    summary = converge_report.runs_summary(runs)
    converge_output.write_json(summary, out / "converge-runs.json")
    print(f"\n{args.runs} runs, {args.nodes} GPU nodes ({out / 'converge-runs.json'}):")
    print(converge_report.runs_table(summary))
    return 1 if any("not_ready" in r for r in runs) else 0


def _run(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """One run on a new cluster: the floor, then sro; the table, JSON and PNG in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="sro-converge-"))
    run = layout.RunDir(base / "cluster")
    inv = out / "inventory.yaml"
    inv.write_text(yaml.safe_dump(inventory(args.nodes, args.kernels)))
    print(f"bench converge in {run.root}: {args.nodes} GPU nodes, {args.kernels} kernels", flush=True)
    # Ctrl-C, a plain kill (timeout(1), a CI job cancelled) and a closed terminal all unwind
    # through the finally blocks that stop the operator and take the cluster down.
    stopping.install()
    try:
        hack_cluster(
            run,
            "up",
            "--inventory",
            str(inv),
            "--pod-gc-threshold",
            str(args.pod_gc_threshold),
            "--build-seconds",
            "{:g}-{:g}".format(*args.build_seconds),
            *(["--profiling"] if args.profile_control_plane else []),
        )
        kubectl = [str(layout.binary("kubectl")), "--kubeconfig", str(run.kubeconfig)]
        subprocess.run([*kubectl, "apply", "--server-side", "-f", str(CRD)], check=True, capture_output=True)
        figures = asyncio.run(measure(args, run, out))
    finally:
        if not args.keep:
            hack_cluster(run, "down")
            shutil.rmtree(base, ignore_errors=True)
    print(converge_output.written(figures, out, profile=args.profile))
    for phase in ("floor", "sro") if args.profile_control_plane else ():
        profile = out / f"{phase}-apiserver.pprof"
        if profile.exists():
            print(f"\nkube-apiserver's CPU in the {phase}'s phase ({profile}), with callees:")
            print(pprof.top(profile, entries=40, cumulative=True))
    return figures


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
