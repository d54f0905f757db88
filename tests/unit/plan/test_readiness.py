"""Readiness rules per kind (contract section 5), one object at a time: a DaemonSet on a
node and a Pod.

Covers DaemonSet pods (ready, generation, deletion, stuck reasons, owner) and Pods
(phases, failure reasons). Cluster-wide objects are ``test_readiness_cluster_objects``'s
subject, wait-for-logs ``test_readiness_logs``'s; how verdicts combine per node is
``test_walk``'s.
"""

from __future__ import annotations

import pytest
from builders import bare_pod, container, ds, ds_pod, failed_pod, live, obj

from sro.plan import live_records, readiness
from sro.plan.readiness import Outcome

pytestmark = pytest.mark.unit

DRIVER = ds("driver", "state-driver")
NO_LOGS: dict[str, dict[str, str]] = {}


def test_a_daemonset_is_ready_on_a_node_when_its_current_pod_there_is_ready() -> None:
    verdict = readiness.daemonset_on_node(DRIVER, live(DRIVER), [ds_pod(DRIVER, "n1")], logs=NO_LOGS)
    assert verdict.outcome is Outcome.READY


def test_a_pod_whose_ready_the_node_controller_withdrew_still_counts() -> None:
    withdrawn = ds_pod(DRIVER, "n1", ready=False, ready_withdrawn=True)
    verdict = readiness.daemonset_on_node(DRIVER, live(DRIVER), [withdrawn], logs=NO_LOGS)
    assert verdict.outcome is Outcome.READY


def test_a_pod_whose_containers_are_not_ready_is_waiting() -> None:
    down = ds_pod(DRIVER, "n1", ready=False)
    verdict = readiness.daemonset_on_node(DRIVER, live(DRIVER), [down], logs=NO_LOGS)
    assert verdict.outcome is Outcome.WAITING
    assert "not ready" in verdict.reason


def test_a_daemonset_that_does_not_exist_yet_is_waiting() -> None:
    verdict = readiness.daemonset_on_node(DRIVER, None, [], logs=NO_LOGS)
    assert verdict.outcome is Outcome.WAITING
    assert "not created" in verdict.reason


def test_a_daemonset_without_a_pod_on_the_node_is_waiting() -> None:
    verdict = readiness.daemonset_on_node(DRIVER, live(DRIVER), [], logs=NO_LOGS)
    assert verdict.outcome is Outcome.WAITING
    assert "waiting for a pod" in verdict.reason


def test_a_ready_pod_of_an_old_template_generation_does_not_count() -> None:
    current = live(DRIVER, generation=3)
    verdict = readiness.daemonset_on_node(DRIVER, current, [ds_pod(DRIVER, "n1", generation=2)], logs=NO_LOGS)
    assert verdict.outcome is Outcome.WAITING
    assert "old template generation" in verdict.reason


def test_the_template_generation_annotation_wins_over_metadata_generation() -> None:
    body = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "driver",
            "namespace": "gpu-ns",
            "generation": 5,
            "annotations": {live_records.DS_TEMPLATE_GENERATION: "4"},
        },
    }
    view = live_records.LiveObject.from_body(body)
    verdict = readiness.daemonset_on_node(DRIVER, view, [ds_pod(DRIVER, "n1", generation=4)], logs=NO_LOGS)
    assert (view.generation, view.template_generation) == (5, 4)
    assert verdict.outcome is Outcome.READY


def test_a_pod_being_deleted_does_not_count() -> None:
    pod = ds_pod(DRIVER, "n1", deleting=True)
    verdict = readiness.daemonset_on_node(DRIVER, live(DRIVER), [pod], logs=NO_LOGS)
    assert verdict.outcome is Outcome.WAITING


@pytest.mark.parametrize("reason", ["ErrImagePull", "ImagePullBackOff", "CrashLoopBackOff"])
def test_a_stuck_daemonset_pod_keeps_the_state_waiting_and_names_the_reason(reason: str) -> None:
    pod = ds_pod(DRIVER, "n1", ready=False, containers=(container(waiting_reason=reason),))
    verdict = readiness.daemonset_on_node(DRIVER, live(DRIVER), [pod], logs=NO_LOGS)
    assert verdict.outcome is Outcome.WAITING
    assert verdict.stuck
    assert verdict.reason.startswith(reason)
    assert pod.name in verdict.reason


def test_a_pod_that_succeeded_is_ready() -> None:
    p = obj("Pod", "validate", "state-validation", node="n1")
    assert readiness.pod_verdict(p, bare_pod(p), logs=NO_LOGS).outcome is Outcome.READY


def test_a_failed_pod_fails_with_its_containers_reason_and_exit_code() -> None:
    p = obj("Pod", "validate", "state-validation", node="n1")
    verdict = readiness.pod_verdict(p, failed_pod(p, exit_code=3), logs=NO_LOGS)
    assert verdict.outcome is Outcome.FAILED
    assert verdict.reason == "Error (exit code 3)"


def test_a_failed_pod_without_exit_codes_still_has_a_reason() -> None:
    p = obj("Pod", "validate", "state-validation", node="n1")
    pod = bare_pod(p, phase="Failed", containers=(container(terminated_reason="OOMKilled"),))
    assert readiness.pod_verdict(p, pod, logs=NO_LOGS).reason == "OOMKilled"
    assert readiness.failure_reason(bare_pod(p, phase="Failed")) == "Failed"


@pytest.mark.parametrize(
    ("phase", "outcome"),
    [("Pending", Outcome.WAITING), ("Running", Outcome.WAITING), ("Unknown", Outcome.WAITING)],
)
def test_a_pod_that_has_not_finished_is_waiting(phase: str, outcome: Outcome) -> None:
    p = obj("Pod", "validate", "state-validation", node="n1")
    verdict = readiness.pod_verdict(p, bare_pod(p, phase=phase), logs=NO_LOGS)
    assert verdict.outcome is outcome
    assert phase in verdict.reason


def test_a_pending_pod_that_cannot_pull_its_image_is_stuck() -> None:
    p = obj("Pod", "validate", "state-validation", node="n1")
    pod = bare_pod(p, phase="Pending", containers=(container(waiting_reason="ImagePullBackOff"),))
    verdict = readiness.pod_verdict(p, pod, logs=NO_LOGS)
    assert verdict.stuck and verdict.reason.startswith("ImagePullBackOff")
