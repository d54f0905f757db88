"""The driver upgrade walk (sro.plan.upgrade) through the planner, on plain values.

Covers: the budget (maxParallel, maxUnavailable counting every unschedulable or NotReady
node), nodes cordoned by someone else left alone, each phase's step (cordon with the
record, drain requests and their timeout, deleting the outdated pod, validation then
uncordon only of what sro cordoned), the previous driver counting until a node's turn,
the halt after maxFailedNodes with UpgradeFailed and its Event; the rollback of failed
nodes (the kept template put back on the DaemonSet, only the failed node's pod replaced,
rolled-back and uncordoned once valid, the halt held until the render changes, a node
whose driver was never replaced or whose rollback timed out left alone). What the engine
does with drains and the DaemonSet controller with a template put back are covered by
the end-to-end tests.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from builders import SR, T0, ds, ds_pod, live, node, seen, states, wanted

from sro.model import upgrade_policy, views
from sro.plan import actions, lifecycle, node_patches, observed, planner, upgrade, upgrade_records
from sro.status import conditions

pytestmark = pytest.mark.unit

TEMPLATE = {"metadata": {"labels": {"app": "driver"}}, "spec": {"containers": [{"image": "d:2"}]}}
OLD_TEMPLATE = {"metadata": {"labels": {"app": "driver"}}, "spec": {"containers": [{"image": "d:1"}]}}
_DS = ds("driver", "state-driver")
DRIVER = replace(
    _DS, body={**_DS.body, "spec": {"updateStrategy": {"type": "OnDelete"}, "template": TEMPLATE}}
)
LABEL = upgrade_records.label(SR)
NOTE = upgrade_records.annotation(SR)
REVISION = upgrade_records.revision(wanted(states("state-driver"), [DRIVER], ["n00"]))


def _record(
    phase: str, *, cordoned: bool = True, since: str = "2026-11-22T06:00:00Z", **kw: Any
) -> dict[str, str]:
    kw.setdefault("revision", REVISION)
    rec = upgrade_records.Record(phase=phase, since=since, cordoned=cordoned, **kw)
    return {NOTE: rec.to_json()}


def _world(
    count: int,
    *,
    policy: upgrade_policy.UpgradePolicy,
    nodes: dict[str, views.NodeView] | None = None,
    generations: dict[str, int] | None = None,
    drains: dict[str, tuple[str, ...]] | None = None,
    now_after: timedelta = timedelta(0),
) -> actions.Plan:
    names = [f"n{i:02d}" for i in range(count)]
    given = nodes or {}
    at = [given.get(n) or node(n) for n in names]
    gens = generations or {}
    pods = [ds_pod(DRIVER, n, generation=gens.get(n, 1)) for n in names]
    cached = live(DRIVER, generation=2, update_strategy="OnDelete")
    observed = seen(at, objects=[cached], pods=pods, upgrade_policy=policy, drains=drains or {})
    return planner.plan(wanted(states("state-driver"), [DRIVER], names), observed, now=T0 + now_after)


def _changes(p: actions.Plan) -> dict[str, node_patches.NodeChange]:
    """The upgrade's node changes (the walk's own labels left out)."""
    return {c.node: c for c in p.node_labels if LABEL in c.labels or c.unschedulable is not None}


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


# -- rollback ---------------------------------------------------------------------------

ROLLBACK = upgrade_policy.UpgradePolicy(max_unavailable="2", max_parallel=1, max_failed_nodes=1)


def _revisions(*, reverted: bool) -> tuple[observed.Revision, ...]:
    """The DaemonSet controller's history: ``old`` (what nodes ran) and ``new`` (the
    failed template); ``old`` is current again once the DaemonSet was reverted."""
    return (
        observed.Revision(
            name="driver-old",
            owner_uid="uid-driver",
            hash="old",
            number=3 if reverted else 1,
            template=OLD_TEMPLATE,
        ),
        observed.Revision(name="driver-new", owner_uid="uid-driver", hash="new", number=2, template=TEMPLATE),
    )


def _hashed(pod: views.PodView, hash_: str) -> views.PodView:
    return replace(pod, labels={**pod.labels, observed.REVISION_HASH: hash_})


def _rolling(
    phase: str,
    *,
    reverted: bool,
    n00_pod: tuple[int, str],
    policy: upgrade_policy.UpgradePolicy = ROLLBACK,
    now_after: timedelta = timedelta(0),
    since: str = "2026-11-22T06:00:00Z",
    moved_on: bool = False,
    n00_ready: bool = True,
    history: tuple[observed.Revision, ...] | None = None,
    **record: Any,
) -> actions.Plan:
    """Four nodes; n00 failed on the new driver (``phase``), the others never started.
    ``n00_pod``: the generation and hash of n00's driver pod; ``moved_on``: the DaemonSet
    has a later template still (generation 4, hash ``newer``)."""
    names = ["n00", "n01", "n02", "n03"]
    record.setdefault("previous", {"driver": "old"})
    record.setdefault("reason", "state-driver failed: Error")
    cordoned = record.pop("cordoned", True)  # sro's cordon, or none (rolled back: uncordoned)
    note = _record(phase, since=since, cordoned=cordoned, **record)
    failed = node("n00", {LABEL: phase}, unschedulable=cordoned, annotations=note)
    generation, hash_ = n00_pod
    pods = [_hashed(ds_pod(DRIVER, "n00", generation=generation, ready=n00_ready), hash_)]
    pods += [_hashed(ds_pod(DRIVER, n, generation=1), "old") for n in names[1:]]
    cached = live(DRIVER, generation=4 if moved_on else 3 if reverted else 2, update_strategy="OnDelete")
    history = _revisions(reverted=reverted) if history is None else history
    if moved_on:
        newer = observed.Revision(
            name="driver-newer", owner_uid="uid-driver", hash="newer", number=4, template={}
        )
        history = (*history, newer)
    observed_ = seen(
        [failed, *(node(n) for n in names[1:])],
        objects=[cached],
        pods=pods,
        upgrade_policy=policy,
        revisions=history,
    )
    return planner.plan(wanted(states("state-driver"), [DRIVER], names), observed_, now=T0 + now_after)


def _applied_template(p: actions.Plan) -> Any:
    return next(o for o in p.apply if o.ref == DRIVER.ref).body["spec"]["template"]


def test_a_halted_rollout_puts_the_kept_template_back_and_rolls_the_failed_node_back_alone() -> None:
    p = _rolling(upgrade_records.FAILED, reverted=False, n00_pod=(2, "new"))
    assert _changes(p)["n00"].labels[LABEL] == upgrade_records.ROLLING_BACK
    assert _changes(p)["n00"].unschedulable is None  # still cordoned while it goes back
    assert set(_changes(p)) == {"n00"}  # no other node touched
    assert _applied_template(p) == OLD_TEMPLATE  # the render says TEMPLATE; the kept one goes back
    degraded = conditions.find(p.status["conditions"], conditions.DEGRADED)
    assert degraded is not None and degraded["reason"] == "UpgradeFailed"
    assert REVISION in degraded["message"] and "n00 (state-driver failed: Error)" in degraded["message"]
    assert p.status["upgrade"]["phase"] == "Halted"


def test_a_node_failing_in_a_pass_is_moved_once_and_goes_back_in_the_next_with_its_reason() -> None:
    late = (T0 - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    p = _rolling(
        upgrade_records.VALIDATING, reverted=False, n00_pod=(2, "new"), n00_ready=False, since=late, reason=""
    )
    assert [c.labels[LABEL] for c in p.node_labels if c.node == "n00"] == [upgrade_records.FAILED]
    why = json.loads(str(_changes(p)["n00"].annotations[NOTE]))["reason"]
    assert why.startswith("not valid after") and why in p.status["upgrade"]["failingNodes"][0]["reason"]
    assert _applied_template(p) == TEMPLATE  # nothing goes back before the node is failed


def test_the_failed_pod_goes_only_once_the_daemonset_carries_the_kept_template_again() -> None:
    before = _rolling(upgrade_records.ROLLING_BACK, reverted=False, n00_pod=(2, "new"))
    assert before.delete == ()  # the DaemonSet still has the failed template: its pod would come back
    assert _applied_template(before) == OLD_TEMPLATE
    after = _rolling(upgrade_records.ROLLING_BACK, reverted=True, n00_pod=(2, "new"))
    assert [(d.ref.name, d.uid) for d in after.delete] == [("driver-n00", "pod-driver-n00-2")]
    assert "n00" not in _changes(after)  # rolling back until valid on the kept template


def test_a_node_valid_on_the_kept_template_is_rolled_back_and_uncordoned_and_the_halt_holds() -> None:
    p = _rolling(upgrade_records.ROLLING_BACK, reverted=True, n00_pod=(3, "old"))
    change = _changes(p)["n00"]
    assert change.labels[LABEL] == upgrade_records.ROLLED_BACK and change.unschedulable is False
    assert json.loads(str(change.annotations[NOTE]))["revision"] == REVISION  # kept: never retried
    assert set(_changes(p)) == {"n00"} and p.delete == ()
    assert p.status["upgrade"]["phase"] == "RolledBack"
    assert [e.reason for e in p.events if e.reason.startswith("Upgrade")] == [
        "UpgradeFailed",
        "UpgradeRolledBack",
    ]

    settled = _rolling(upgrade_records.ROLLED_BACK, reverted=True, n00_pod=(3, "old"), cordoned=False)
    assert _changes(settled) == {}  # nothing starts, nothing is retried
    assert _applied_template(settled) == OLD_TEMPLATE  # the kept template stays while the render does
    assert settled.status["upgrade"]["failingNodes"] == [
        {"node": "n00", "reason": "state-driver failed: Error"}
    ]
    degraded = conditions.find(settled.status["conditions"], conditions.DEGRADED)
    assert degraded is not None and "rolled back to the previous revision: n00" in degraded["message"]


def test_a_new_render_walks_rolled_back_nodes_again_and_drops_the_kept_template() -> None:
    kw: dict[str, Any] = {"cordoned": False, "revision": "driver@other"}
    p = _rolling(upgrade_records.ROLLED_BACK, reverted=True, n00_pod=(3, "old"), **kw)
    assert _applied_template(p) == TEMPLATE  # the render again
    degraded = conditions.find(p.status["conditions"], conditions.DEGRADED)
    assert degraded is None or degraded["status"] != "True"
    assert _changes(p)["n00"].annotations[NOTE] is None  # nothing of the old rollout is left to do
    p = _rolling(upgrade_records.ROLLED_BACK, reverted=True, n00_pod=(3, "old"), moved_on=True, **kw)
    assert _changes(p)["n00"].labels[LABEL] == upgrade_records.CORDONED  # walked like any other node
    assert p.status["upgrade"]["phase"] == "InProgress" and p.status["upgrade"]["nodes"]["pending"] == 3


def test_a_node_whose_driver_was_never_replaced_is_not_rolled_back_and_stays_cordoned() -> None:
    p = _rolling(upgrade_records.FAILED, reverted=False, n00_pod=(1, "old"), reason="drain did not finish")
    assert _changes(p) == {} and p.delete == ()
    assert _applied_template(p) == TEMPLATE
    assert p.status["upgrade"]["phase"] == "Halted"


def test_a_node_whose_previous_template_is_gone_stays_failed_and_the_message_says_why() -> None:
    p = _rolling(upgrade_records.FAILED, reverted=False, n00_pod=(2, "new"), history=())
    assert _changes(p) == {} and _applied_template(p) == TEMPLATE
    degraded = conditions.find(p.status["conditions"], conditions.DEGRADED)
    assert degraded is not None and "no ControllerRevision left" in degraded["message"], degraded


def test_without_auto_rollback_a_failed_node_stays_failed() -> None:
    policy = replace(ROLLBACK, auto_rollback=False)
    p = _rolling(upgrade_records.FAILED, reverted=False, n00_pod=(2, "new"), policy=policy)
    assert _changes(p) == {} and _applied_template(p) == TEMPLATE


def test_a_rollback_past_its_bound_fails_for_good_and_is_not_tried_again() -> None:
    p = _rolling(
        upgrade_records.ROLLING_BACK,
        reverted=True,
        n00_pod=(3, "old"),
        since=(T0 - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    assert p.walk is not None
    change = _changes(p).get("n00")
    # Valid on the kept template: rolled back even late (the bound is for one that is not).
    assert change is not None and change.labels[LABEL] == upgrade_records.ROLLED_BACK
    stuck = _rolling(
        upgrade_records.ROLLING_BACK,
        reverted=True,
        n00_pod=(2, "new"),
        since=(T0 - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    change = _changes(stuck)["n00"]
    assert change.labels[LABEL] == upgrade_records.FAILED and change.unschedulable is None
    assert json.loads(str(change.annotations[NOTE]))["rollbackFailed"] is True
    again = _rolling(
        upgrade_records.FAILED,
        reverted=True,
        n00_pod=(3, "old"),
        rollback_failed=True,
        reason="rollback not complete",
    )
    assert _changes(again) == {}  # never rolled back twice


def test_a_pod_of_the_current_revision_is_not_outdated_whatever_its_generation() -> None:
    pods = [
        _hashed(ds_pod(DRIVER, "n00", generation=1), "old"),
        _hashed(ds_pod(DRIVER, "n01", generation=2), "new"),
    ]
    cached = live(DRIVER, generation=3, update_strategy="OnDelete")
    observed_ = seen(
        [node("n00"), node("n01")], objects=[cached], pods=pods, revisions=_revisions(reverted=True)
    )
    assert set(upgrade_records.outdated(observed_)) == {"n01"}


def test_a_node_started_for_a_template_that_went_back_to_its_own_is_not_drained_and_finishes() -> None:
    # The DaemonSet's template was edited, then set back (drift repaired): the node started
    # meanwhile runs the current template again, by hash, though of an older generation.
    p = _rolling(upgrade_records.CORDONED, reverted=True, n00_pod=(1, "old"), previous={}, reason="")
    assert _changes(p)["n00"].labels[LABEL] == upgrade_records.VALIDATING and p.drains == ()
    p = _rolling(upgrade_records.VALIDATING, reverted=True, n00_pod=(1, "old"), previous={}, reason="")
    done = _changes(p)["n00"]
    assert done.labels[LABEL] == upgrade_records.DONE and done.unschedulable is False
    assert p.delete == ()


def test_a_rollout_is_rolled_back_only_once_no_failed_node_is_left_to_go_back() -> None:
    late = (T0 - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    back = node(
        "n00", {LABEL: upgrade_records.ROLLED_BACK}, annotations=_record("rolled-back", cordoned=False)
    )
    failing = node(
        "n01",
        {LABEL: upgrade_records.VALIDATING},
        unschedulable=True,
        annotations=_record("validating", since=late, previous={"driver": "old"}),
    )
    pods = [
        _hashed(ds_pod(DRIVER, "n00", generation=3), "old"),
        _hashed(ds_pod(DRIVER, "n01", generation=2, ready=False), "new"),  # fails validation now
        _hashed(ds_pod(DRIVER, "n02", generation=1), "old"),
    ]
    cached = live(DRIVER, generation=3, update_strategy="OnDelete")
    observed_ = seen(
        [back, failing, node("n02")],
        objects=[cached],
        pods=pods,
        upgrade_policy=replace(ROLLBACK, max_failed_nodes=2),
        revisions=_revisions(reverted=True),
    )
    p = planner.plan(wanted(states("state-driver"), [DRIVER], ["n00", "n01", "n02"]), observed_, now=T0)
    assert _changes(p)["n01"].labels[LABEL] == upgrade_records.FAILED
    assert p.status["upgrade"]["phase"] == "Halted"  # n01 still goes back: not RolledBack yet
    assert "UpgradeRolledBack" not in [e.reason for e in p.events]


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
