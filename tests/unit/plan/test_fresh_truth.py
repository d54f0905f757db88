"""Irreversible steps are decided on fresh truth only.

Covers: which DaemonSet pods sro replaces on a node whose upgrade reached ``replacing``
(only an ``OnDelete`` DaemonSet's, only pods of an older template than the cached
DaemonSet, never one that looks newer because the DaemonSet's cache lags); deletions held
while the caches they rest on have not shown
sro's own last writes (``Observed.lagging``), with a quick look again; and teardown that
never lets the finalizer go on such caches.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from builders import SR, T0, World, ds, ds_pod, live, node, node_pods, seen, states, wanted

from sro.plan import actions, lifecycle, planner, upgrade, upgrade_records

pytestmark = pytest.mark.unit

NODE = ("v1", "Node")
REPLACING = {upgrade_records.label(SR): upgrade_records.REPLACING}
POD = ("v1", "Pod")
DAEMONSET = ("apps/v1", "DaemonSet")


def driver_world(*, strategy: str, cached_generation: int, pod_generations: dict[str, int]) -> actions.Plan:
    driver = ds("driver", "state-driver")
    nodes = sorted(pod_generations)
    want = wanted(states("state-driver"), [driver], nodes)
    pods = [ds_pod(driver, n, generation=g) for n, g in pod_generations.items()]
    cached = live(driver, generation=cached_generation, update_strategy=strategy)
    at = seen([node(n, REPLACING, unschedulable=True) for n in nodes], objects=[cached], pods=pods)
    return planner.plan(want, at, now=T0)


def test_an_on_delete_daemonsets_pods_of_an_older_template_are_replaced() -> None:
    p = driver_world(strategy="OnDelete", cached_generation=2, pod_generations={"n1": 1, "n2": 2})
    assert [(d.ref.name, d.uid) for d in p.delete] == [("driver-n1", "pod-driver-n1-1")]
    assert "upgrading n1" in p.delete[0].reason


def test_a_rolling_update_daemonsets_pods_are_left_to_its_controller() -> None:
    p = driver_world(strategy="RollingUpdate", cached_generation=2, pod_generations={"n1": 1, "n2": 2})
    assert p.delete == ()


def test_a_pod_newer_than_the_cached_daemonset_means_the_cache_lags_and_is_never_deleted() -> None:
    p = driver_world(strategy="OnDelete", cached_generation=2, pod_generations={"n1": 3, "n2": 3})
    assert p.delete == ()


def test_a_deletion_waits_while_its_caches_lag_behind_sros_own_writes_and_is_looked_at_soon() -> None:
    driver = ds("driver", "state-driver")
    gone = ds("old", "state-driver")  # desired no more
    want = wanted(states("state-driver"), [driver], ["n1"])
    pods = [ds_pod(driver, "n1", generation=1)]
    base = seen(
        [node("n1", REPLACING, unschedulable=True)],
        objects=[live(driver, generation=2, update_strategy="OnDelete"), live(gone)],
        pods=pods,
    )
    fresh = planner.plan(want, base, now=T0)
    assert {d.ref.name for d in fresh.delete} == {"old", "driver-n1"}
    for lagging, left in (
        (frozenset({POD}), {"old"}),
        (frozenset({NODE}), {"old"}),
        (frozenset({DAEMONSET}), set()),
    ):
        held = planner.plan(want, replace(base, lagging=lagging), now=T0)
        assert {d.ref.name for d in held.delete} == left, lagging
        assert held.requeue_after == planner.CATCH_UP.total_seconds()
    assert fresh.requeue_after == upgrade.REPLACE_TIMEOUT.total_seconds()  # its bound, at most


def test_objects_removed_are_announced_only_when_their_deletion_is_sent() -> None:
    driver, gone = ds("driver", "state-driver"), ds("old", "state-driver")
    want = wanted(states("state-driver"), [driver], ["n1"])
    base = seen([node("n1")], objects=[live(driver), live(gone)], pods=[ds_pod(driver, "n1")])
    held = planner.plan(want, replace(base, lagging=frozenset({DAEMONSET})), now=T0)
    assert held.removed == () and not held.delete
    sent = planner.plan(want, base, now=T0)
    assert [r.name for r in sent.removed] == ["old"] == [d.ref.name for d in sent.delete]


def test_the_finalizer_never_goes_while_a_cache_lags_behind_sros_own_writes() -> None:
    assert planner.plan_teardown(sr_name=SR, seen=seen([]), generation=1, now=T0).finalizer_removable
    lagging = replace(seen([]), lagging=frozenset({NODE}))
    down = planner.plan_teardown(sr_name=SR, seen=lagging, generation=1, now=T0)
    assert not down.finalizer_removable and down.requeue_after == planner.TEARDOWN_POLL


def test_fresh_enough_names_the_caches_each_deletion_rests_on() -> None:
    pod = lifecycle.Deletion(ref=node_pods("v", "s", ["n1"])[0].ref)
    assert lifecycle.fresh_enough(pod, seen([]))
    for kind in (POD, NODE, DAEMONSET):
        assert not lifecycle.fresh_enough(pod, replace(seen([]), lagging=frozenset({kind}))), kind
    daemonset = lifecycle.Deletion(ref=ds("plugin", "s").ref)
    assert not lifecycle.fresh_enough(daemonset, replace(seen([]), lagging=frozenset({DAEMONSET})))
    assert lifecycle.fresh_enough(daemonset, replace(seen([]), lagging=frozenset({NODE, POD})))


def test_a_world_whose_caches_catch_up_settles_as_before() -> None:
    world = World(
        desired=wanted(states("state-driver"), [ds("driver", "state-driver")], ["n1", "n2"]),
        nodes={n: node(n) for n in ("n1", "n2")},
    )
    world.settle()
    assert all(world.complete_states(n) == {"state-driver"} for n in ("n1", "n2"))
