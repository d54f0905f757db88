"""Between SpecialResources: conflicts over nodes, and dependencies.

Covers contract section 6: two SpecialResources of one recipe whose selections overlap —
the later one gets ``ConflictingNodeSelector`` naming the other and the shared node, and
runs on none of the shared nodes; a missing dependency is ``DependencyMissing`` naming it,
and once it exists and completes the dependent becomes Ready; two SpecialResources
depending on each other are both ``DependencyCycle``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import specialresources as srs
from conftest import Made, unique
from operator_process import REPO
from support import waiting

pytestmark = pytest.mark.e2e

RHEL = {"kernel": "5.14.0-427.13.1.el9_4.x86_64", "os": {"id": "rhel", "versionId": "9.4"}}
SIDE = "e2e.sro.dev/side"


async def test_the_later_of_two_overlapping_special_resources_yields_the_shared_nodes(made: Made) -> None:
    group, nodes = made.group(
        "cnf",
        [
            {"count": 1, "labels": {f"{SIDE}-a": "yes"}, **RHEL},
            {"count": 1, "labels": {f"{SIDE}-a": "yes", f"{SIDE}-b": "yes"}, **RHEL},
            {"count": 1, "labels": {f"{SIDE}-b": "yes"}, **RHEL},
        ],
    )
    only_a, shared, only_b = (next(n for n in nodes if n.startswith(f"{group}-{i}-")) for i in range(3))
    first = made.sr(
        srs.manifest(
            unique("first"), recipe="simple-kmod", node_selector={srs.GROUP_LABEL: group, f"{SIDE}-a": "yes"}
        )
    )
    await srs.wait_ready(made.cluster, first, within=120)
    second = made.sr(
        srs.manifest(
            unique("second"), recipe="simple-kmod", node_selector={srs.GROUP_LABEL: group, f"{SIDE}-b": "yes"}
        )
    )

    cond = await srs.wait_degraded(made.cluster, second, "ConflictingNodeSelector", within=60)
    assert first in cond["message"] and shared in cond["message"], cond["message"]

    def second_done_on_its_own_node() -> bool:
        by_name = {n["metadata"]["name"]: n for n in srs.nodes(made.cluster, {srs.GROUP_LABEL: group})}
        return srs.sr_labels(by_name[only_b], second).get(f"{second}.sro.dev/complete") == "true"

    await waiting.wait_for(
        second_done_on_its_own_node,
        timeout=120,
        interval=0.5,
        message="the later SpecialResource completes on its own node",
    )
    by_name = {n["metadata"]["name"]: n for n in srs.nodes(made.cluster, {srs.GROUP_LABEL: group})}
    assert srs.sr_labels(by_name[shared], second) == {}
    assert srs.sr_labels(by_name[shared], first).get(f"{first}.sro.dev/complete") == "true"
    assert srs.sr_labels(by_name[only_a], second) == {}
    assert srs.condition(srs.status(made.cluster, first), "Degraded")["status"] == "False"
    assert {p["spec"]["nodeName"] for p in srs.pods(made.cluster, second)} == {only_b}
    assert any(e["reason"] == "ConflictFound" for e in srs.events(made.cluster, second))


def _copy_of_simple_kmod(recipe_dir: Callable[..., Path], name: str) -> str:
    """A drop-in copy of simple-kmod under another name (a dependency uses its own recipe)."""
    source = REPO / "assets" / "simple-kmod"
    files = {str(p.relative_to(source)): p.read_text() for p in source.rglob("*.yaml")}
    recipe_dir(name, files)
    return name


async def test_a_missing_dependency_is_named_and_the_dependent_completes_once_it_exists(
    made: Made, recipe_dir: Callable[..., Path]
) -> None:
    group, _ = made.group("dep", [{"count": 2, **RHEL}])
    selector = {srs.GROUP_LABEL: group}
    base = unique("base")
    base_recipe = _copy_of_simple_kmod(recipe_dir, unique("kmod-base"))
    dependent = made.sr(
        srs.manifest(
            unique("top"),
            recipe="simple-kmod",
            node_selector=selector,
            extra_spec={"dependencies": [{"name": base}]},
        )
    )
    cond = await srs.wait_degraded(made.cluster, dependent, "DependencyMissing", within=60)
    assert base in cond["message"], cond["message"]
    assert srs.pods(made.cluster, dependent) == [] or all(
        not p["spec"].get("nodeName") for p in srs.pods(made.cluster, dependent)
    ), "nothing runs before the dependency is complete"

    made.sr(srs.manifest(base, recipe=base_recipe, node_selector=selector))
    await srs.wait_ready(made.cluster, base, within=120)
    await srs.wait_ready(made.cluster, dependent, within=120)


async def test_two_special_resources_depending_on_each_other_are_both_a_cycle(made: Made) -> None:
    group, _ = made.group("cyc", [{"count": 1, **RHEL}])
    one, two = unique("one"), unique("two")
    selector = {srs.GROUP_LABEL: group}
    made.sr(
        srs.manifest(
            one, recipe="simple-kmod", node_selector=selector, extra_spec={"dependencies": [{"name": two}]}
        )
    )
    made.sr(
        srs.manifest(
            two, recipe="simple-kmod", node_selector=selector, extra_spec={"dependencies": [{"name": one}]}
        )
    )
    for name in (one, two):
        cond = await srs.wait_degraded(made.cluster, name, "DependencyCycle", within=60)
        assert one in cond["message"] and two in cond["message"], cond["message"]
