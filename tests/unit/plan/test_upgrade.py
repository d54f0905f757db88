"""The driver upgrade walk (sro.plan.upgrade) through the planner, on plain values.

Covers: the budget (maxParallel, maxUnavailable counting every unschedulable or NotReady
node), nodes cordoned by someone else left alone, each phase's step (cordon with the
record, drain requests and their timeout, deleting the outdated pod, validation then
uncordon only of what sro cordoned), the previous driver counting until a node's turn,
the halt after maxFailedNodes with UpgradeFailed and its Event, teardown uncordoning
only what an upgrade of sro cordoned, and a node's record read back (an unreadable one as
none, a long one as a short one). The rollback of failed nodes is
``test_upgrade_rollback``'s subject, the ``waiting-for-jobs`` phase ``test_upgrade_jobs``'s.
What the engine does with drains is covered by the end-to-end tests.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from builders import SR, T0, ds_pod, live, node, seen, states, wanted
from upgrade_builders import DRIVER, LABEL, NOTE, REVISION, _changes, _record

from sro.model import upgrade_policy, views
from sro.plan import actions, lifecycle, node_patches, observed, planner, upgrade, upgrade_records
from sro.status import conditions

pytestmark = pytest.mark.unit


def _world(
    count: int,
    *,
    policy: upgrade_policy.UpgradePolicy,
    nodes: dict[str, views.NodeView] | None = None,
    generations: dict[str, int] | None = None,
    drains: dict[str, tuple[str, ...]] | None = None,
    now_after: timedelta = timedelta(0),
    answers: dict[str, observed.NodeAnswer] | None = None,
) -> actions.Plan:
    names = [f"n{i:02d}" for i in range(count)]
    given = nodes or {}
    at = [given.get(n) or node(n) for n in names]
    gens = generations or {}
    pods = [ds_pod(DRIVER, n, generation=gens.get(n, 1)) for n in names]
    cached = live(DRIVER, generation=2, update_strategy="OnDelete")
    world = seen(
        at,
        objects=[cached],
        pods=pods,
        upgrade_policy=policy,
        drains=drains or {},
        node_answers=answers or {},
    )
    return planner.plan(wanted(states("state-driver"), [DRIVER], names), world, now=T0 + now_after)


def test_nodes_start_within_max_parallel_and_max_unavailable_counting_every_unavailable_node() -> None:
    policy = upgrade_policy.UpgradePolicy(max_unavailable="30%", max_parallel=5)
    p = _world(10, policy=policy)
    started = {n for n, c in _changes(p).items() if c.labels.get(LABEL) == upgrade_records.CORDONED}
    assert started == {"n00", "n01", "n02"}  # 30% of 10: three, though five may run in parallel
    assert all(_changes(p)[n].unschedulable is True for n in started)
    assert json.loads(_changes(p)["n00"].annotations[NOTE])["cordoned"] is True
    assert p.delete == ()  # nobody's driver pod goes before its node is drained

    admin = node("n05", unschedulable=True)
    sick = replace(node("n06"), ready=False)
    p = _world(10, policy=policy, nodes={"n05": admin, "n06": sick})
    changed = _changes(p)
    assert {n for n, c in changed.items() if c.labels.get(LABEL) == upgrade_records.CORDONED} == {"n00"}
    assert "n05" not in changed and "n06" not in changed  # never touched
    assert p.status["upgrade"]["skipped"] == ["n05", "n06"]


def test_a_rollout_held_back_by_a_notready_node_looks_again_on_its_own() -> None:
    """Readiness wakes no pass (``NodeView.relevant``): the walk asks for one itself while
    a NotReady node is skipped or uses up the unavailable budget, and only then."""
    policy = upgrade_policy.UpgradePolicy(max_unavailable="1", max_parallel=1)
    sick = replace(node("n01"), ready=False)
    p = _world(3, policy=policy, nodes={"n01": sick})
    assert _changes(p) == {}  # the one unavailable node the budget allows is the NotReady one
    assert p.status["upgrade"]["skipped"] == ["n01"]
    assert p.requeue_after == upgrade.READY_POLL.total_seconds()
    # n01 already runs the new driver: not skipped, but NotReady, it uses up the budget
    p = _world(3, policy=policy, nodes={"n01": sick}, generations={"n01": 2})
    assert _changes(p) == {} and p.status["upgrade"]["skipped"] == []
    assert p.requeue_after == upgrade.READY_POLL.total_seconds()

    admin = node("n01", unschedulable=True)  # a cordon is read at once: no polling for it
    p = _world(
        3, policy=upgrade_policy.UpgradePolicy(max_unavailable="2", max_parallel=1), nodes={"n01": admin}
    )
    assert set(_changes(p)) == {"n00"} and p.requeue_after == 0
    p = _world(
        1, policy=policy, nodes={"n00": node("n00", {LABEL: upgrade_records.DONE})}, generations={"n00": 2}
    )
    assert p.requeue_after is None


def test_in_progress_nodes_use_up_max_parallel() -> None:
    policy = upgrade_policy.UpgradePolicy(max_unavailable="100%", max_parallel=2)
    busy = {
        n: node(n, {LABEL: upgrade_records.DRAINING}, unschedulable=True, annotations=_record("draining"))
        for n in ("n00", "n01")
    }
    p = _world(6, policy=policy, nodes=busy)
    assert not [c for c in p.node_labels if c.labels.get(LABEL) == upgrade_records.CORDONED]
    assert {d.node for d in p.drains} == {"n00", "n01"}


def test_a_node_cached_from_before_sros_last_move_of_it_is_read_as_that_move_left_it() -> None:
    """A pass may start before the node cache shows sro's last patch of a node: its phase
    and record are read from what that patch returned, its cordon from the patch itself.
    Read from the cache, a node sro just moved to draining would be moved there again,
    with no drain asked for in between, and a drain's answer would be lost."""
    policy = upgrade_policy.UpgradePolicy(max_unavailable="1", max_parallel=2)
    draining = {LABEL: upgrade_records.DRAINING}
    cordoned = node(
        "n00", {LABEL: upgrade_records.CORDONED}, unschedulable=True, annotations=_record("cordoned"),
        resource_version="41",
    )  # fmt: skip
    moved = observed.NodeAnswer(version=42, labels=draining, annotations=_record("draining"))
    p = _world(3, policy=policy, nodes={"n00": cordoned}, answers={"n00": moved})
    assert [d.node for d in p.drains] == ["n00"] and "n00" not in _changes(p)
    p = _world(3, policy=policy, nodes={"n00": cordoned}, answers={"n00": moved}, drains={"n00": ()})
    assert _changes(p)["n00"].labels[LABEL] == upgrade_records.REPLACING
    stale = observed.NodeAnswer(version=40, labels=draining, annotations=_record("draining"))
    p = _world(3, policy=policy, nodes={"n00": cordoned}, answers={"n00": stale})
    assert _changes(p)["n00"].labels[LABEL] == upgrade_records.DRAINING  # the cache is newer: as it says

    # Cordoned by sro's last patch, which the cache does not show yet: not cordoned again,
    # and it counts as unavailable (a second node would exceed maxUnavailable 1).
    pending = node("n00", resource_version="41")
    cordon = observed.NodeAnswer(
        version=42,
        labels={LABEL: upgrade_records.CORDONED},
        annotations=_record("cordoned"),
        unschedulable=True,
    )
    p = _world(3, policy=policy, nodes={"n00": pending}, answers={"n00": cordon})
    assert _changes(p)["n00"].labels[LABEL] == upgrade_records.DRAINING
    assert _changes(p)["n00"].unschedulable is None
    assert set(_changes(p)) == {"n00"}
    p = _world(3, policy=policy, nodes={"n00": pending})
    assert set(_changes(p)) == {"n00"} and _changes(p)["n00"].labels[LABEL] == upgrade_records.CORDONED


def test_a_node_walks_cordoned_draining_replacing_validating_done() -> None:
    policy = upgrade_policy.UpgradePolicy(max_unavailable="1", max_parallel=1)

    def at(phase: str, **kw: Any) -> views.NodeView:
        return node("n00", {LABEL: phase}, unschedulable=True, annotations=_record(phase, **kw))

    p = _world(2, policy=policy, nodes={"n00": at(upgrade_records.CORDONED)})
    assert _changes(p)["n00"].labels[LABEL] == upgrade_records.DRAINING
    p = _world(2, policy=policy, nodes={"n00": at(upgrade_records.DRAINING)})
    assert [d.node for d in p.drains] == ["n00"] and "n00" not in _changes(p)
    p = _world(2, policy=policy, nodes={"n00": at(upgrade_records.DRAINING)}, drains={"n00": ()})
    assert _changes(p)["n00"].labels[LABEL] == upgrade_records.REPLACING
    p = _world(2, policy=policy, nodes={"n00": at(upgrade_records.REPLACING)})
    assert [(d.ref.name, d.uid) for d in p.delete] == [("driver-n00", "pod-driver-n00-1")]
    p = _world(2, policy=policy, nodes={"n00": at(upgrade_records.REPLACING)}, generations={"n00": 2})
    assert _changes(p)["n00"].labels[LABEL] == upgrade_records.VALIDATING
    p = _world(2, policy=policy, nodes={"n00": at(upgrade_records.VALIDATING)}, generations={"n00": 2})
    done = _changes(p)["n00"]
    assert (
        done.labels[LABEL] == upgrade_records.DONE
        and done.unschedulable is False
        and done.annotations[NOTE] is None
    )


def test_sro_never_uncordons_a_node_it_did_not_cordon() -> None:
    policy = upgrade_policy.UpgradePolicy(max_unavailable="1")
    theirs = node(
        "n00",
        {LABEL: upgrade_records.VALIDATING},
        unschedulable=True,
        annotations=_record("validating", cordoned=False),
    )
    p = _world(2, policy=policy, nodes={"n00": theirs}, generations={"n00": 2})
    assert _changes(p)["n00"].unschedulable is None
    assert node_patches.for_change(theirs, _changes(p)["n00"], sr_name=SR) is not None
    assert "spec" not in (node_patches.for_change(theirs, _changes(p)["n00"], sr_name=SR) or {})


def test_a_cordon_carries_the_nodes_resource_version() -> None:
    fresh = node("n00", resource_version="42")
    change = node_patches.NodeChange(node="n00", labels={LABEL: "cordoned"}, unschedulable=True)
    patch = node_patches.for_change(fresh, change, sr_name=SR)
    assert patch == {
        "metadata": {"labels": {LABEL: "cordoned"}, "resourceVersion": "42"},
        "spec": {"unschedulable": True},
    }


def test_a_pending_nodes_previous_driver_still_counts_and_a_replacing_nodes_does_not() -> None:
    policy = upgrade_policy.UpgradePolicy(max_unavailable="1")
    replacing = node(
        "n01", {LABEL: upgrade_records.REPLACING}, unschedulable=True, annotations=_record("replacing")
    )
    p = _world(3, policy=policy, nodes={"n01": replacing})
    assert p.walk is not None
    assert p.walk.nodes["n00"]["state-driver"].phase.value == "Complete"
    assert p.walk.nodes["n01"]["state-driver"].phase.value == "Progressing"


def test_a_drain_past_its_timeout_fails_the_node_which_stays_cordoned_and_halts_the_rollout() -> None:
    policy = upgrade_policy.UpgradePolicy(
        max_unavailable="2", max_parallel=2, drain=upgrade_policy.Drain(timeout_seconds=60)
    )
    draining = node(
        "n00", {LABEL: upgrade_records.DRAINING}, unschedulable=True, annotations=_record("draining")
    )
    p = _world(
        4,
        policy=policy,
        nodes={"n00": draining},
        drains={"n00": ("apps/web-1: PodDisruptionBudget",)},
        now_after=timedelta(seconds=61),
    )
    change = _changes(p)["n00"]
    assert change.labels[LABEL] == upgrade_records.FAILED and change.unschedulable is None
    assert "apps/web-1" in json.loads(str(change.annotations[NOTE]))["reason"]
    assert not [c for c in p.node_labels if c.labels.get(LABEL) == upgrade_records.CORDONED]  # halted at once
    degraded = conditions.find(p.status["conditions"], conditions.DEGRADED)
    assert degraded is not None and degraded["reason"] == "UpgradeFailed" and "n00" in degraded["message"]
    assert [e.reason for e in p.events if e.reason == "UpgradeFailed"] == ["UpgradeFailed"]
    assert p.status["upgrade"]["phase"] == "Halted"


def test_a_failed_node_below_max_failed_nodes_lets_the_rest_go_on() -> None:
    policy = upgrade_policy.UpgradePolicy(max_unavailable="3", max_parallel=1, max_failed_nodes=2)
    failed = node(
        "n00", {LABEL: upgrade_records.FAILED}, unschedulable=True, annotations=_record("failed", reason="x")
    )
    p = _world(4, policy=policy, nodes={"n00": failed})
    assert {n for n, c in _changes(p).items() if c.labels.get(LABEL) == upgrade_records.CORDONED} == {"n01"}
    assert p.status["upgrade"]["failingNodes"] == [{"node": "n00", "reason": "x"}]


def test_teardown_uncordons_only_nodes_an_upgrade_of_sro_cordoned_and_drops_the_record() -> None:
    ours = node("n00", {LABEL: upgrade_records.DRAINING}, unschedulable=True, annotations=_record("draining"))
    theirs = node(
        "n01",
        {LABEL: upgrade_records.FAILED},
        unschedulable=True,
        annotations=_record("failed", cordoned=False),
    )
    changes = {c.node: c for c in lifecycle.strip_nodes(SR, [ours, theirs])}
    assert changes["n00"].unschedulable is False and changes["n00"].annotations == {NOTE: None}
    assert changes["n01"].unschedulable is None and changes["n01"].labels == {LABEL: None}


@pytest.mark.parametrize("text", ["not json", "[1, 2]", "{" * 3000 + "}" * 3000, '{"phase": 3}'])
def test_an_unreadable_upgrade_record_reads_as_none(text: str) -> None:
    rec = upgrade_records.record(views.NodeView(name="n00", annotations={NOTE: text}), SR)
    assert (rec.phase, rec.revision, rec.cordoned) == ("3" if text == '{"phase": 3}' else "", "", False)


def test_an_upgrade_record_reads_the_same_short_or_long() -> None:
    short = upgrade_records.Record(phase="draining", since="2026-11-22T06:00:00Z", revision=REVISION)
    long = replace(short, previous={f"ds-{i}": f"hash-{i}" for i in range(200)})
    for rec in (short, long):
        text = rec.to_json()
        read = upgrade_records.record(views.NodeView(name="n00", annotations={NOTE: text}), SR)
        assert (
            read == rec
            and upgrade_records.record(views.NodeView(name="n01", annotations={NOTE: text}), SR) == rec
        )
    assert len(long.to_json()) > 2048
