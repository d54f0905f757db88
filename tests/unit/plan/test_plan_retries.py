"""A failed pod in the plan: retried after a backoff, and reported meanwhile.

A failed validation pod fails its own node only and is made again once its backoff is
over; the SpecialResource stays Degraded while the pod backs off and while its
replacement runs (not Progressing, no new Event); the backoff doubles with each failure
of the same pod up to its bound; a failed cluster-wide pod is not applied again before
its retry. Also what a stuck pod's Progressing state names (``ImagePullBackOff``) and
that a Degraded reason outside the contract is refused.

Driven through ``World`` (builders), an in-memory stand-in for the cluster between
reconciles, where passes follow one another.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from builders import (
    NS,
    T0,
    container,
    ds,
    ds_pod,
    failed_pod,
    linear_world,
    live,
    node,
    obj,
    seen,
    states,
    wanted,
)

from sro.plan import planner, pod_retries
from sro.status import summary

pytestmark = pytest.mark.unit


def test_a_failed_validation_pod_fails_that_node_only_and_is_recreated_after_backoff() -> None:
    world = linear_world(pod_outcome={"validate-n2": "Failed"})
    world.settle()
    p = world.last
    assert p is not None and p.walk is not None
    assert p.walk.nodes["n2"]["state-validation"].phase.value == "Failed"
    assert {str(k): v for k, v in p.walk.phase_counts("state-validation").items()} == {
        "Complete": 2,
        "Failed": 1,
    }
    assert {str(k): v for k, v in p.walk.phase_counts("state-device-plugin").items()} == {
        "Complete": 2,
        "Pending": 1,
    }
    assert world.complete_states("n1") == {"state-driver", "state-validation", "state-device-plugin"}
    assert world.complete_states("n2") == {"state-driver"}
    assert p.status["state"] == "Degraded: StateFailed on 1 node (n2: Error (exit code 1))"
    assert p.requeue_after == 10.0
    assert p.retries[obj("Pod", "validate-n2", "s").ref].attempts == 1
    assert not p.delete and "validate-n2" not in {o.ref.name for o in p.apply}

    world.later(4)
    assert world.step().requeue_after == 6.0
    world.later(6)
    world.pod_outcome["validate-n2"] = "Succeeded"
    failed_uid = world.pods[(NS, "validate-n2")].uid
    due = world.step()
    assert [(d.ref.name, d.uid) for d in due.delete] == [("validate-n2", failed_uid)]
    world.settle()
    assert world.complete_states("n2") == {"state-driver", "state-validation", "state-device-plugin"}
    assert world.status["state"] == "Ready: 3/3 nodes"
    assert world.retries == {}


def test_a_failed_pod_stays_degraded_while_backing_off_and_while_its_replacement_runs() -> None:
    world = linear_world(pod_outcome={"validate-n2": "Failed"})
    world.settle()
    failed = world.status
    world.later(10)
    world.pod_outcome["validate-n2"] = "Running"
    deleted = world.step()  # the failed pod goes
    assert [d.ref.name for d in deleted.delete] == ["validate-n2"]
    for _ in range(2):  # the pod is gone, then its replacement runs
        p = world.step()
        row = next(r for r in p.status["states"] if r["name"] == "state-validation")
        assert p.status["phase"] == "Degraded"
        assert row["failingNodes"] == [{"node": "n2", "reason": "Error (exit code 1)"}]
        assert {c["type"]: c["status"] for c in p.status["conditions"]}["Progressing"] == "False"
        assert p.status == failed and not p.events
    world.pods[(NS, "validate-n2")] = replace(world.pods[(NS, "validate-n2")], phase="Succeeded")
    world.settle()
    assert world.status["state"] == "Ready: 3/3 nodes"


def test_the_backoff_doubles_with_each_failure_of_the_same_pod() -> None:
    world = linear_world(pod_outcome={"validate-n1": "Failed"})
    world.settle()
    world.later(10)
    world.step()  # deletes the failed pod
    world.step()  # recreates it; it fails again
    world.step()
    assert world.last is not None
    assert world.last.retries[obj("Pod", "validate-n1", "s").ref].attempts == 2
    assert world.last.requeue_after == 20.0
    assert [pod_retries.backoff(n).total_seconds() for n in (1, 2, 3, 9, 100)] == [10, 20, 40, 300, 300]


def test_an_image_pull_backoff_is_named_in_the_progressing_state() -> None:
    d = ds("driver", "state-driver")
    stuck = ds_pod(d, "n2", ready=False, containers=(container(waiting_reason="ImagePullBackOff"),))
    want = wanted(states("state-driver"), [d], ["n1", "n2"])
    view = seen([node("n1"), node("n2")], objects=[live(d)], pods=[ds_pod(d, "n1"), stuck])
    p = planner.plan(want, view, now=T0)
    row = p.status["states"][0]
    assert p.status["state"] == "Progressing: state-driver 1/2 nodes"
    assert row["phase"] == "Progressing"
    assert row["message"] == f"n2: ImagePullBackOff (pod {stuck.name})"


def test_a_problem_reason_outside_the_contract_is_refused() -> None:
    with pytest.raises(ValueError, match="not a Degraded reason"):
        summary.Problem(reason="Whatever", message="")


def test_a_failed_cluster_wide_pod_is_not_applied_while_it_waits_for_its_retry() -> None:
    job_pod = obj("Pod", "build", "state-build")
    want = wanted(states("state-build"), [job_pod], ["n1"])
    p = planner.plan(want, seen([node("n1")], objects=[live(job_pod)], pods=[failed_pod(job_pod)]), now=T0)
    assert p.apply == () and p.delete == ()
    assert p.requeue_after == 10.0
    assert p.status["state"] == "Degraded: StateFailed on 1 node (n1: Error (exit code 1))"
