"""The rollback of a halted driver upgrade (sro.plan.upgrade_rollback) through the planner,
on plain values.

With ``autoRollback``, a node that failed on the new driver goes back to the template it
ran before while the rollout stays halted. Covers: the kept template put back on the
DaemonSet, only the failed node's pod replaced, and only once the DaemonSet carries the
kept template again; the node rolled back and uncordoned once valid, the halt held until
the render changes, and a new render walking rolled-back nodes again; a node whose
driver was never replaced, whose previous template is gone or whose rollback timed out
left alone, and every failed node without ``autoRollback``; which pods are outdated, by
their revision's hash rather than their generation. What the DaemonSet controller does
with a template put back is covered by the end-to-end tests.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from builders import T0, ds_pod, live, node, seen, states, wanted
from upgrade_builders import DRIVER, LABEL, NOTE, REVISION, TEMPLATE, _changes, _record

from sro.model import upgrade_policy, views
from sro.plan import actions, live_records, planner, upgrade_records
from sro.status import conditions

pytestmark = pytest.mark.unit

OLD_TEMPLATE = {"metadata": {"labels": {"app": "driver"}}, "spec": {"containers": [{"image": "d:1"}]}}
ROLLBACK = upgrade_policy.UpgradePolicy(max_unavailable="2", max_parallel=1, max_failed_nodes=1)


def _revisions(*, reverted: bool) -> tuple[live_records.Revision, ...]:
    """The DaemonSet controller's history: ``old`` (what nodes ran) and ``new`` (the
    failed template); ``old`` is current again once the DaemonSet was reverted."""
    return (
        live_records.Revision(
            name="driver-old",
            owner_uid="uid-driver",
            hash="old",
            number=3 if reverted else 1,
            template=OLD_TEMPLATE,
        ),
        live_records.Revision(
            name="driver-new", owner_uid="uid-driver", hash="new", number=2, template=TEMPLATE
        ),
    )


def _hashed(pod: views.PodView, hash_: str) -> views.PodView:
    return replace(pod, labels={**pod.labels, live_records.REVISION_HASH: hash_})


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
    history: tuple[live_records.Revision, ...] | None = None,
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
        newer = live_records.Revision(
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
