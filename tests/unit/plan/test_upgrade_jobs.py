"""The ``waiting-for-jobs`` phase of the driver upgrade (sro.plan.upgrade_jobs) through the planner.

Covers: a cordoned node with ``waitForCompletion`` waits (no selector or none at all:
straight to the drain), the plan asks the engine about that node's jobs with the
selector, and the next pass goes by the answer: jobs still running keep the node waiting
(no drain, no driver pod deleted, asked again within the poll), none left moves it on
(to replacing when drains are off), past ``timeoutSeconds`` it moves on anyway naming the
jobs left in its record, and ``timeoutSeconds: 0`` waits as long as they run; a waiting
node uses up ``maxParallel`` and is counted in ``status.upgrade``; which listed pods count
as jobs still running. What the engine's list returns is covered by the end-to-end test.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from builders import SR, T0, ds_pod, live, node, seen, states, wanted
from upgrade_builders import DRIVER, LABEL, NOTE, REVISION  # the same driver DaemonSet and node keys

from sro.model import upgrade_policy, views
from sro.observe import sr_series
from sro.plan import actions, node_patches, planner, upgrade_jobs, upgrade_records

pytestmark = pytest.mark.unit

TRAIN = {"job": "train", "team": "ml"}


def _policy(
    timeout: int = 0, *, selector: dict[str, str] | None = None, **kw: Any
) -> upgrade_policy.UpgradePolicy:
    wait = upgrade_policy.WaitForCompletion(
        pod_selector=TRAIN if selector is None else selector, timeout_seconds=timeout
    )
    kw.setdefault("max_unavailable", "100%")
    return upgrade_policy.UpgradePolicy(wait_for_completion=wait, **kw)


def _at(phase: str, name: str = "n00") -> views.NodeView:
    rec = upgrade_records.Record(phase=phase, since="2026-11-22T06:00:00Z", cordoned=True, revision=REVISION)
    return node(name, {LABEL: phase}, unschedulable=True, annotations={NOTE: rec.to_json()})


def _plan(
    count: int,
    *,
    policy: upgrade_policy.UpgradePolicy,
    nodes: dict[str, views.NodeView] | None = None,
    jobs: dict[str, tuple[str, ...]] | None = None,
    generations: dict[str, int] | None = None,
    after: timedelta = timedelta(0),
) -> actions.Plan:
    names = [f"n{i:02d}" for i in range(count)]
    at = [(nodes or {}).get(n) or node(n) for n in names]
    pods = [ds_pod(DRIVER, n, generation=(generations or {}).get(n, 1)) for n in names]
    cached = live(DRIVER, generation=2, update_strategy="OnDelete")
    observed = seen(at, objects=[cached], pods=pods, upgrade_policy=policy, jobs=jobs or {})
    return planner.plan(wanted(states("state-driver"), [DRIVER], names), observed, now=T0 + after)


def _moves(p: actions.Plan) -> dict[str, node_patches.NodeChange]:
    return {c.node: c for c in p.node_labels if LABEL in c.labels}


def test_a_cordoned_node_waits_for_jobs_and_the_plan_asks_about_them_with_the_selector() -> None:
    p = _plan(2, policy=_policy(), nodes={"n00": _at(upgrade_records.CORDONED)})
    assert _moves(p)["n00"].labels[LABEL] == upgrade_records.WAITING
    assert [(c.node, c.label_selector) for c in p.job_checks] == [("n00", "job=train,team=ml")]
    assert p.drains == () and p.delete == ()


@pytest.mark.parametrize(
    "policy",
    [upgrade_policy.UpgradePolicy(max_unavailable="100%"), _policy(selector={})],
    ids=["no-waitForCompletion", "empty-podSelector"],
)
def test_without_a_selector_a_cordoned_node_goes_straight_to_its_drain(
    policy: upgrade_policy.UpgradePolicy,
) -> None:
    p = _plan(2, policy=policy, nodes={"n00": _at(upgrade_records.CORDONED)})
    assert _moves(p)["n00"].labels[LABEL] == upgrade_records.DRAINING
    assert p.job_checks == ()


@pytest.mark.parametrize("answer", [None, ("ml/train-1",)], ids=["not-yet-asked", "a-job-runs"])
def test_a_waiting_node_stays_while_its_jobs_run_neither_drained_nor_replaced(
    answer: tuple[str, ...] | None,
) -> None:
    jobs = {} if answer is None else {"n00": answer}
    p = _plan(
        2,
        policy=_policy(timeout=600),
        nodes={"n00": _at(upgrade_records.WAITING)},
        jobs=jobs,
        after=timedelta(minutes=9),
    )
    assert "n00" not in _moves(p)
    assert [c.node for c in p.job_checks] == ["n00"]  # asked again
    assert p.drains == () and p.delete == ()
    assert p.requeue_after is not None and p.requeue_after <= upgrade_jobs.JOBS_POLL.total_seconds()
    assert p.status["upgrade"]["nodes"][upgrade_records.WAITING] == 1


def test_a_node_whose_jobs_finished_goes_on_to_its_drain_or_with_drains_off_to_replacing() -> None:
    p = _plan(2, policy=_policy(), nodes={"n00": _at(upgrade_records.WAITING)}, jobs={"n00": ()})
    assert _moves(p)["n00"].labels[LABEL] == upgrade_records.DRAINING
    assert p.job_checks == ()
    no_drain = _policy(drain=upgrade_policy.Drain(enable=False))
    p = _plan(2, policy=no_drain, nodes={"n00": _at(upgrade_records.WAITING)}, jobs={"n00": ()})
    assert _moves(p)["n00"].labels[LABEL] == upgrade_records.REPLACING


def test_past_the_timeout_the_node_goes_on_to_its_drain_naming_the_jobs_left() -> None:
    waiting = {"n00": _at(upgrade_records.WAITING)}
    jobs = {"n00": ("ml/train-1", "ml/train-2")}
    p = _plan(2, policy=_policy(timeout=60), nodes=waiting, jobs=jobs, after=timedelta(seconds=59))
    assert "n00" not in _moves(p)
    assert p.requeue_after is not None and p.requeue_after <= 1  # woken when the timeout is due
    p = _plan(2, policy=_policy(timeout=60), nodes=waiting, jobs=jobs, after=timedelta(seconds=60))
    moved = _moves(p)["n00"]
    assert moved.labels[LABEL] == upgrade_records.DRAINING
    reason = json.loads(moved.annotations[NOTE] or "{}")["reason"]
    assert "60s" in reason and "ml/train-1, ml/train-2" in reason
    assert p.job_checks == ()


def test_timeout_zero_waits_as_long_as_the_jobs_run() -> None:
    p = _plan(
        2,
        policy=_policy(timeout=0),
        nodes={"n00": _at(upgrade_records.WAITING)},
        jobs={"n00": ("ml/train-1",)},
        after=timedelta(days=30),
    )
    assert "n00" not in _moves(p)
    assert [c.node for c in p.job_checks] == ["n00"]


def test_a_waiting_node_goes_on_once_the_policy_no_longer_waits() -> None:
    p = _plan(
        2,
        policy=upgrade_policy.UpgradePolicy(max_unavailable="100%"),
        nodes={"n00": _at(upgrade_records.WAITING)},
    )
    assert _moves(p)["n00"].labels[LABEL] == upgrade_records.DRAINING
    assert p.job_checks == ()


def test_a_waiting_node_uses_up_max_parallel() -> None:
    p = _plan(
        3,
        policy=_policy(max_parallel=1),
        nodes={"n00": _at(upgrade_records.WAITING)},
        jobs={"n00": ("ml/a",)},
    )
    assert not [c for c in _moves(p).values() if c.labels[LABEL] == upgrade_records.CORDONED]
    assert p.status["upgrade"]["nodes"] == {upgrade_records.WAITING: 1, upgrade_records.PENDING: 2}


def test_a_waiting_node_whose_driver_is_current_again_skips_the_drain() -> None:
    p = _plan(2, policy=_policy(), nodes={"n00": _at(upgrade_records.WAITING)}, generations={"n00": 2})
    assert _moves(p)["n00"].labels[LABEL] == upgrade_records.VALIDATING


def _pod(phase: str = "Running", **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ml", "labels": dict(TRAIN), **meta},
        "status": {"phase": phase},
    }


@pytest.mark.parametrize(
    ("pod", "runs"),
    [
        (_pod("Running"), True),
        (_pod("Pending"), True),
        (_pod("Succeeded"), False),
        (_pod("Failed"), False),
        (_pod(deletionTimestamp="2026-11-22T06:00:00Z"), False),
        (_pod(ownerReferences=[{"kind": "DaemonSet", "name": "d", "controller": True}]), False),
        (_pod(ownerReferences=[{"kind": "Job", "name": "train", "controller": True}]), True),
        (_pod(annotations={"kubernetes.io/config.mirror": "x"}), False),
        (_pod(labels={**TRAIN, "sro.dev/owner": SR}), False),
    ],
    ids=["running", "pending", "succeeded", "failed", "deleting", "daemonset", "job", "mirror", "sro-own"],
)
def test_which_listed_pods_are_jobs_still_running(pod: dict[str, Any], runs: bool) -> None:
    assert upgrade_jobs.unfinished(pod) is runs


def test_every_upgrade_phase_has_its_series_in_the_upgrade_gauge() -> None:
    assert set(upgrade_records.PHASES) <= set(sr_series.UPGRADE_PHASES)
