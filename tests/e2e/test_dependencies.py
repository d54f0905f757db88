"""Dependencies between SpecialResources, node by node.

A dependent's workloads on a node start only once every dependency is complete on that
node: the pods' creation times and the dependency's ``complete`` node label prove the
order on each node. A dependency that does not exist is ``DependencyMissing`` naming it;
one that does not select some of the dependent's nodes is named, with those nodes, and
the nodes it does cover go ahead; a cycle is ``DependencyCycle`` on every member, and
breaking it lets every member complete.

The dependency uses a drop-in copy of simple-kmod under another name, so dependent and
dependency never compete for nodes as two users of one recipe would (test_conflicts.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import specialresources as srs
from conftest import Made, unique
from operator_process import REPO
from support import waiting

pytestmark = pytest.mark.e2e

RHEL = {"kernel": "5.14.0-427.13.1.el9_4.x86_64", "os": {"id": "rhel", "versionId": "9.4"}}
HOSTNAME = "kubernetes.io/hostname"


def _kmod_copy(recipe_dir: Callable[..., Path], name: str) -> str:
    """The simple-kmod recipe, dropped in under ``name``."""
    source = REPO / "assets" / "simple-kmod"
    recipe_dir(name, {str(p.relative_to(source)): p.read_text() for p in source.rglob("*.yaml")})
    return name


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _pods_on(made: Made, namespace: str, node: str) -> list[dict[str, Any]]:
    return [p for p in srs.pods(made.cluster, namespace) if p["spec"].get("nodeName") == node]


def _last_transition(pod: dict[str, Any]) -> datetime:
    """When the pod last changed condition: for a finished pod, when it finished."""
    return max(_time(c["lastTransitionTime"]) for c in pod["status"]["conditions"])


def _node(made: Made, name: str) -> dict[str, Any]:
    return made.cluster.kubectl_json("get", "node", name)


async def test_a_dependent_starts_on_each_node_only_after_its_dependency_completed_there(
    made: Made, recipe_dir: Callable[..., Path]
) -> None:
    group, nodes = made.group("dep", [{"count": 2, **RHEL}])
    selector = {srs.GROUP_LABEL: group}
    base = unique("base")
    dependent = made.sr(
        srs.manifest(
            unique("top"),
            recipe="simple-kmod",
            node_selector=selector,
            extra_spec={"dependencies": [{"name": base}]},
        )
    )
    cond = await srs.wait_degraded(made.cluster, dependent, "DependencyMissing", within=90)
    assert base in cond["message"], cond["message"]
    for node in nodes:
        assert _pods_on(made, dependent, node) == [], f"nothing of {dependent} runs on {node} yet"
        assert srs.sr_labels(_node(made, node), dependent) == {}

    made.sr(srs.manifest(base, recipe=_kmod_copy(recipe_dir, unique("kmod-dep")), node_selector=selector))
    await srs.wait_ready(made.cluster, base, within=180)
    status = await srs.wait_ready(made.cluster, dependent, within=180)
    assert status["nodes"] == {"selected": 2, "complete": 2}
    assert srs.condition(status, "Degraded")["status"] == "False"

    for node in nodes:
        assert srs.sr_labels(_node(made, node), base).get(f"{base}.sro.dev/complete") == "true"
        base_done = max(_last_transition(p) for p in _pods_on(made, base, node))
        dependent_pods = _pods_on(made, dependent, node)
        assert dependent_pods, node
        first_start = min(_time(p["metadata"]["creationTimestamp"]) for p in dependent_pods)
        assert first_start >= base_done, (node, first_start, base_done)
        # The dependent's workloads require the dependency's complete label on the node.
        for ds in srs.owned(made.cluster, "daemonsets", dependent, namespace=dependent):
            affinity = json.dumps(ds["spec"]["template"]["spec"].get("affinity") or {})
            assert f"{base}.sro.dev/complete" in affinity, ds["metadata"]["name"]


async def test_a_dependency_that_skips_a_node_is_named_for_that_node_while_the_covered_node_goes_ahead(
    made: Made, recipe_dir: Callable[..., Path]
) -> None:
    group, nodes = made.group("skip", [{"count": 2, **RHEL}])
    covered, skipped = nodes
    base = made.sr(
        srs.manifest(
            unique("base"),
            recipe=_kmod_copy(recipe_dir, unique("kmod-skip")),
            node_selector={srs.GROUP_LABEL: group, HOSTNAME: covered},
        )
    )
    await srs.wait_ready(made.cluster, base, within=180)
    dependent = made.sr(
        srs.manifest(
            unique("top"),
            recipe="simple-kmod",
            node_selector={srs.GROUP_LABEL: group},
            extra_spec={"dependencies": [{"name": base}]},
        )
    )

    cond = await srs.wait_degraded(made.cluster, dependent, "DependencyMissing", within=90)
    assert base in cond["message"] and skipped in cond["message"], cond["message"]
    assert covered not in cond["message"], cond["message"]

    def covered_node_complete() -> bool:
        return srs.sr_labels(_node(made, covered), dependent).get(f"{dependent}.sro.dev/complete") == "true"

    await waiting.wait_for(
        covered_node_complete,
        timeout=180,
        interval=0.5,
        message=f"{dependent} completes on {covered}, which {base} covers",
    )
    assert _pods_on(made, dependent, skipped) == [], f"{skipped} waits for {base}"
    assert srs.sr_labels(_node(made, skipped), dependent) == {}
    status = srs.status(made.cluster, dependent)
    assert status["nodes"] == {"selected": 2, "complete": 1}
    # The skipped node's own reason, in the state it waits in, names the missing dependency.
    first_row = status["states"][0]
    assert skipped in first_row["message"] and base in first_row["message"], first_row


async def test_a_three_way_cycle_is_reported_on_every_member_and_breaking_it_lets_all_complete(
    made: Made, recipe_dir: Callable[..., Path]
) -> None:
    group, nodes = made.group("cycle", [{"count": 2, **RHEL}])
    names = [unique("cyc-a"), unique("cyc-b"), unique("cyc-c")]
    for i, name in enumerate(names):  # a -> b -> c -> a, on the same nodes, each its own recipe
        made.sr(
            srs.manifest(
                name,
                recipe=_kmod_copy(recipe_dir, unique(f"kmod-cyc{i}")),
                node_selector={srs.GROUP_LABEL: group},
                extra_spec={"dependencies": [{"name": names[(i + 1) % 3]}]},
            )
        )
    for name in names:
        cond = await srs.wait_degraded(made.cluster, name, "DependencyCycle", within=90)
        assert all(member in cond["message"] for member in names), cond["message"]
    for name in names:
        for node in nodes:
            assert _pods_on(made, name, node) == [], f"no member of a cycle can start: {name} on {node}"

    # c stops depending on a: c runs first, then b, then a.
    patch = json.dumps({"spec": {"dependencies": []}})
    made.cluster.kubectl("patch", "sr", names[2], "--type=merge", "-p", patch)
    for name in reversed(names):
        status = await srs.wait_ready(made.cluster, name, within=180)
        assert srs.condition(status, "Degraded")["status"] == "False", name
