"""Driver upgrades node by node, against the real cluster and a real ``sro run``.

Covers: a driver version change (simple-kmod's module list, which changes the driver
DaemonSet's pod template) rolled out under ``maxUnavailable`` 10% of the nodes and ``maxParallel: 5``,
checked by an independent watcher (``upgrade_watch``): never more nodes unavailable than
the budget, each node's driver pod replaced exactly once, every node schedulable at the
end; and nodes an administrator cordoned, before and during the rollout, left alone
(never uncordoned, never drained, their driver kept) and reported as skipped while the
rollout completes on the rest. Timing and request counts are printed for the record.
"""

from __future__ import annotations

import json
import time

import pytest
import specialresources as srs
from conftest import Made, unique
from support import waiting
from upgrade_watch import Watcher

pytestmark = pytest.mark.e2e

KERNEL = ("5.14.0-427.13.1.el9_4.x86_64", "rhel", "9.4")
POLICY = {"maxParallel": 5}
NODES = 40


def _cordon(made: Made, node: str) -> None:
    made.cluster.kubectl(
        "patch", "node", node, "--type=merge", "-p", json.dumps({"spec": {"unschedulable": True}})
    )


async def _upgrade(
    made: Made, count: int, *, budget: int, cordoned_before: int = 0, cordon_during: int = 0
) -> None:
    k, os_id, version = KERNEL
    group, nodes = made.group(
        "upg", [{"count": count, "kernel": k, "os": {"id": os_id, "versionId": version}, "pci": []}]
    )
    name = unique("upg")
    body = srs.manifest(
        name,
        recipe="simple-kmod",
        node_selector={srs.GROUP_LABEL: group},
        extra_spec={"upgradePolicy": {**POLICY, "maxUnavailable": budget}},
    )
    made.sr(body)
    await srs.wait_ready(made.cluster, name, within=300)
    protected = sorted(nodes)[:cordoned_before]
    for node in protected:
        _cordon(made, node)

    watcher = Watcher(
        cluster=made.cluster,
        nodes=frozenset(nodes),
        namespace=name,
        driver_prefix="simple-kmod-driver-",
        budget=budget,
        protected=frozenset(protected),
    )
    await watcher.start()
    try:
        await waiting.wait_for(
            lambda: (len(watcher.unschedulable) == count and len(watcher.driver_ready) == count) or None,
            timeout=60,
            message="the watcher to see every node and driver pod",
        )
        watcher.arm()
        started = time.monotonic()
        made.cluster.kubectl(
            "patch",
            "sr",
            name,
            "--type=merge",
            "-p",
            json.dumps({"spec": {"set": {"modules": ["simple-kmod"]}}}),
        )
        late: list[str] = []
        if cordon_during:

            def someone_started() -> bool | None:
                return any(watcher.cordons.values()) or None

            await waiting.wait_for(someone_started, timeout=120, message="the rollout to start")
            # A node not yet reached: neither cordoned nor replaced so far.
            untouched = [
                n for n in sorted(nodes, reverse=True) if not watcher.cordons[n] and n not in protected
            ]
            late = untouched[:cordon_during]
            for node in late:
                _cordon(made, node)
            # Cordons sro could not foresee when it started its nodes: they add to what may be down.
            watcher.budget += len(late)
            watcher.protected = frozenset({*protected, *late})

        skipped = set(protected) | set(late)

        def finished() -> dict[str, object] | None:
            up = srs.status(made.cluster, name).get("upgrade") or {}
            counts = up.get("nodes") or {}
            done = counts.get("done", 0) == count - len(skipped)
            return (
                up
                if done
                and not any(
                    counts.get(p) for p in ("pending", "cordoned", "draining", "replacing", "validating")
                )
                else None
            )

        upgrade = await waiting.wait_for(finished, timeout=900, interval=1.0, message="the upgrade to finish")
        took = time.monotonic() - started
        await waiting.wait_for(
            lambda: all(not watcher.unschedulable[n] for n in set(nodes) - skipped) or None,
            timeout=60,
            message="every upgraded node schedulable in the watcher's view",
        )
    finally:
        await watcher.stop()

    upgraded = count - len(skipped)
    print(f"upgraded {upgraded} nodes (budget {budget}, 5 parallel): {took:.1f}s; peak down {watcher.peak}")
    assert watcher.violations == []
    assert {n: watcher.replaced[n] for n in nodes if n not in skipped} == {
        n: 1 for n in nodes if n not in skipped
    }
    assert all(watcher.replaced[n] == 0 for n in skipped), "a skipped node's driver was replaced"
    assert all(watcher.unschedulable[n] for n in skipped), (
        "a node cordoned by an administrator was uncordoned"
    )
    assert sorted(upgrade["skipped"]) == sorted(skipped)[:10]
    for node in srs.nodes(made.cluster, {srs.GROUP_LABEL: group}):
        node_name = node["metadata"]["name"]
        if node_name not in skipped:
            assert not node["spec"].get("unschedulable"), node_name
            assert f"sro.dev/upgrade.{name}" not in (node["metadata"].get("annotations") or {})
    await srs.wait_ready(made.cluster, name, within=120)


async def test_a_driver_change_rolls_out_node_by_node_within_the_budget(made: Made) -> None:
    await _upgrade(made, NODES, budget=NODES // 10)  # 10%


async def test_nodes_cordoned_by_an_administrator_are_skipped_never_drained_nor_uncordoned(
    made: Made,
) -> None:
    # Three cordoned nodes count as unavailable: five leave room for two at a time.
    await _upgrade(made, 20, budget=5, cordoned_before=2, cordon_during=1)
