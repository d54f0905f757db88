"""How long one ``sro.plan.planner.plan()`` takes for the nvidia-gpu recipe, and its memory.

    hack/bench plan [--nodes 100,1000,5000] [--kernels 3] [--repeat 5]

For each node count it generates an inventory the way ``hack/cluster inventory`` does
(hack/lib/simcluster; about four nodes in five carry an accelerator, but the SpecialResource
selects every node with an NVIDIA device), renders the built-in ``nvidia-gpu`` recipe for it
with ``sro.hooks.pipeline.render_desired`` (the code ``sro run`` uses), and times ``plan()``
on two worlds:

* ``fresh``: nothing exists yet (the first reconcile after the SpecialResource is created);
* ``converged``: every object exists and is ready, every DaemonSet pod is Ready with the
  driver's log line, every per-node pod Succeeded, and every node carries its state labels
  and kernel-group annotation (the steady state a large cluster spends its life in);
* ``unchanged``: the converged world again, handed the last walk's memory as ``sro run``
  hands it (``sro.plan.walk_memo``): what a pass costs when no node's inputs changed;
* ``told``: the unchanged world's very records again (the caches hand the same objects
  while nothing changes), told by the caches' journal that nothing changed since that
  walk (``Observed.touched``, as ``sro run`` tells it), with the pods indexed by name and
  by node as the engine keeps them (``pods_seen``, ``pods_index``): no node's key is built again;
* ``kernel``: one node of the converged world rebooted into a kernel no other node runs,
  rendered again (the ``render s`` column is that render, handed the one before as ``sro
  run`` hands it) and planned with the converged walk's memory: the work between a kernel
  change and its new DaemonSet.

Times are the median and the best of ``--repeat`` calls. Memory is measured in a separate
call under ``tracemalloc`` (so it does not slow the timed ones): the peak of Python
allocations during one ``plan()`` call, beyond what its inputs already held. The last line
is the process's peak resident set size.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import statistics
import sys
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
if Path(sys.prefix).resolve() != (ROOT / ".venv").resolve() and VENV_PYTHON.exists():
    os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), __file__, *sys.argv[1:]])
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "hack" / "lib"))

from simcluster import inventory as siminventory  # noqa: E402

from sro.hooks import builds, pipeline  # noqa: E402
from sro.model import desired, inventory, views  # noqa: E402
from sro.model import specialresource as sr_model  # noqa: E402
from sro.plan import actions, lifecycle, live_records, observed, planner, pods_index, walk_memo  # noqa: E402
from sro.render import kinds, values  # noqa: E402
from sro.render import recipe as recipe_  # noqa: E402

SR_NAME = "nvidia-gpu"
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
DRIVER_LOG = "driver loaded"


def special_resource() -> sr_model.SpecialResource:
    body = {
        "apiVersion": "sro.dev/v1alpha1",
        "kind": "SpecialResource",
        "metadata": {
            "name": SR_NAME,
            "uid": "bench-uid",
            "generation": 1,
            "creationTimestamp": "2026-11-22T11:00:00Z",
        },
        "spec": {
            "recipe": "nvidia-gpu",
            "nodeSelector": {"feature.node.kubernetes.io/pci-10de.present": "true"},
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        },
    }
    return sr_model.parse(body)


def nodes_for(count: int, kernels: int) -> list[views.NodeView]:
    document = siminventory.generate(nodes=count, kernels=kernels, prefix="bench")
    return inventory.parse([document], file=f"generated:{count}")


def render(
    sr: sr_model.SpecialResource,
    recipe: recipe_.Recipe,
    nodes: list[views.NodeView],
    *,
    last: desired.DesiredState | None = None,
) -> desired.DesiredState:
    """The render ``sro run`` makes (``last``: the one before it, as the engine hands it)."""
    return pipeline.render_desired(
        sr,
        recipe,
        nodes,
        env=pipeline.Environment(
            cluster_version="1.36",
            operator=values.OperatorInfo(),
            proxy=values.ProxySettings(),
            is_namespaced=kinds.builtin_is_namespaced,
            is_served=kinds.builtin_is_served,
        ),
        last=last,
    )


def fresh(wanted: desired.DesiredState, nodes: list[views.NodeView]) -> observed.Observed:
    selected = set(wanted.nodes)
    return observed.Observed(generation=1, nodes={n.name: n for n in nodes if n.name in selected})


def converged(wanted: desired.DesiredState, nodes: list[views.NodeView]) -> observed.Observed:
    """Everything made, ready, labelled: what a settled cluster shows every reconcile."""
    selected = set(wanted.nodes)
    objects: dict[desired.ObjectRef, live_records.LiveObject] = {}
    pods: list[views.PodView] = []
    logs: dict[str, dict[str, str]] = {}
    settled = builds.without_builds(wanted)  # every image exists: no build Job ran
    for obj in settled.objects:
        ref = obj.ref
        uid = f"uid-{ref.kind}-{ref.name}"
        ready = {
            "Established": live_records.ObjectCondition(status="True"),
            "Complete": live_records.ObjectCondition(status="True"),
        }
        objects[ref] = live_records.LiveObject(
            ref=ref,
            uid=uid,
            generation=1,
            observed_generation=1,
            template_generation=1,
            replicas=1,
            available_replicas=1,
            ready_replicas=1,
            conditions=ready,
            phase="Active",
        )
        if obj.kind == "Pod" and obj.node is not None:
            pods.append(
                views.PodView(
                    namespace=ref.namespace,
                    name=ref.name,
                    uid=f"pod-{ref.name}",
                    node=obj.node,
                    phase="Succeeded",
                    labels=dict(obj.body["metadata"].get("labels") or {}),
                )
            )
        elif obj.kind == "DaemonSet":
            containers = [c["name"] for c in obj.body["spec"]["template"]["spec"]["containers"]]
            group = obj.kernel_group
            for node in sorted(selected):
                if group is not None and wanted.kernel_groups.get(node) != group:
                    continue
                pod_uid = f"pod-{ref.name}-{node}"
                pods.append(
                    views.PodView(
                        namespace=ref.namespace,
                        name=f"{ref.name}-{node}",
                        uid=pod_uid,
                        node=node,
                        phase="Running",
                        ready=True,
                        labels={"pod-template-generation": "1"},
                        owner_kind="DaemonSet",
                        owner_name=ref.name,
                        owner_uid=uid,
                        containers=tuple(views.ContainerState(name=c, ready=True) for c in containers),
                    )
                )
                logs[pod_uid] = dict.fromkeys(containers, DRIVER_LOG)
    labels = {lifecycle.state_label(SR_NAME, s.name): "ready" for s in settled.states}
    labels[lifecycle.complete_label(SR_NAME)] = "true"
    annotation = lifecycle.kernel_annotation(SR_NAME)
    walked = {}
    for n in nodes:
        if n.name not in selected:
            continue
        group = wanted.kernel_groups[n.name]
        walked[n.name] = views.NodeView(
            name=n.name,
            labels={**n.labels, **labels},
            annotations={**n.annotations, annotation: group.key},
            taints=(views.Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule"),),
            ready=True,
            kernel_version=n.kernel_version,
            os_image=n.os_image,
            architecture=n.architecture,
        )
    return observed.Observed(
        generation=1,
        nodes=walked,
        objects=objects,
        pods=tuple(pods),
        logs=logs,
        taints=(views.Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule"),),
    )


def rebooted(node: views.NodeView) -> views.NodeView:
    """``node`` after a reboot into a kernel no other node runs."""
    kernel = "5.14.0-999.1.1.el9_4.x86_64"
    return dataclasses.replace(
        node, labels={**node.labels, views.KERNEL_LABEL: kernel}, kernel_version=kernel
    )


def timed(
    wanted: desired.DesiredState, seen: observed.Observed, repeat: int
) -> tuple[float, float, actions.Plan]:
    times = []
    result: Any = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = planner.plan(wanted, seen, now=NOW)
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), result


def peak_bytes(wanted: desired.DesiredState, seen: observed.Observed) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    planner.plan(wanted, seen, now=NOW)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak - base


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="100,1000,5000", help="comma-separated node counts")
    parser.add_argument("--kernels", type=int, default=3, help="kernels among the generated nodes")
    parser.add_argument("--repeat", type=int, default=5, help="timed calls per world")
    args = parser.parse_args()

    sr = special_resource()
    recipe = recipe_.load_directory(ROOT / "assets" / "nvidia-gpu")
    print(
        f"recipe nvidia-gpu: {len(recipe.states)} states; Python {sys.version.split()[0]}; "
        f"median and best of {args.repeat}"
    )
    print(
        f"{'nodes':>6} {'selected':>8} {'groups':>6} {'objects':>7} {'render s':>9} "
        f"{'world':>9} {'plan median s':>13} {'best s':>8} {'peak MiB':>8} {'apply':>6} {'labels':>6}"
    )
    for count in (int(c) for c in args.nodes.split(",")):
        nodes = nodes_for(count, args.kernels)
        start = time.perf_counter()
        wanted = render(sr, recipe, nodes)
        rendered = time.perf_counter() - start
        groups = len(set(wanted.kernel_groups.values()))
        last: Any = None
        last_seen: Any = None
        for label, build in (
            ("fresh", fresh),
            ("converged", converged),
            ("unchanged", converged),
            ("told", converged),
            ("kernel", converged),
        ):
            # "told": the very records the last plan read, as the caches hand them unchanged.
            seen = last_seen if label == "told" else build(wanted, nodes)
            planned = wanted
            if label in ("unchanged", "told", "kernel"):  # with the last walk's memory (sro run's case)
                seen = dataclasses.replace(seen, walk_memo=last.walk.memo)
            if label == "told":  # with the pods indexed as the engine keeps them (``pods_seen``)
                named = {(p.namespace, p.name): p for p in seen.pods}
                seen = dataclasses.replace(
                    seen, touched=walk_memo.Touched(), pods_named=named, pods_on=pods_index.by_node(named)
                )
            if label == "kernel":
                name = next(iter(seen.nodes))
                seen = dataclasses.replace(seen, nodes={**seen.nodes, name: rebooted(seen.nodes[name])})
                start = time.perf_counter()
                moved = [rebooted(n) if n.name == name else n for n in nodes]
                planned = render(sr, recipe, moved, last=wanted)
                rendered = time.perf_counter() - start
            median, best, result = timed(planned, seen, args.repeat)
            last, last_seen = result, seen
            peak = peak_bytes(planned, seen) / 2**20
            print(
                f"{count:>6} {len(wanted.nodes):>8} {groups:>6} {len(wanted.objects):>7} {rendered:>9.3f} "
                f"{label:>9} {median:>13.3f} {best:>8.3f} {peak:>8.1f} {len(result.apply):>6} "
                f"{len(result.node_labels):>6}",
                flush=True,
            )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process peak RSS: {rss:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
