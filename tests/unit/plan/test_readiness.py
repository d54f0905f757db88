"""Readiness rules per kind (contract section 5), one object at a time.

Covers DaemonSet pods (ready, generation, deletion, stuck reasons, owner), Pods (phases,
failure reasons), Jobs, Deployments, StatefulSets, CRDs, Namespaces, other kinds, and
wait-for-logs. How verdicts combine per node is ``test_walk``'s subject.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from builders import bare_pod, container, ds, ds_pod, failed_pod, live, obj, replica_pod

from sro.model import logpattern
from sro.plan import observed, readiness

pytestmark = pytest.mark.unit

Outcome = readiness.Outcome
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
            "annotations": {observed.DS_TEMPLATE_GENERATION: "4"},
        },
    }
    view = observed.LiveObject.from_body(body)
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


def _conditions(**status: str) -> dict[str, observed.ObjectCondition]:
    return {k: observed.ObjectCondition(status=v, reason=f"{k}Reason") for k, v in status.items()}


JOB = obj("Job", "build", "state-build")
DEPLOY = obj("Deployment", "grafana", "state-grafana")
STS = obj("StatefulSet", "db", "state-db")
CRD = obj("CustomResourceDefinition", "things.example.com", "state-crd", namespace="")
NAMESPACE = obj("Namespace", "gpu-ns", "state-ns", namespace="")
CONFIGMAP = obj("ConfigMap", "dashboard", "state-grafana")

# (object, live projection or None, expected outcome)
TABLE = [
    (JOB, live(JOB, conditions=_conditions(Complete="True")), Outcome.READY),
    (JOB, live(JOB, conditions=_conditions(Failed="True")), Outcome.FAILED),
    (JOB, live(JOB), Outcome.WAITING),
    (
        DEPLOY,
        live(DEPLOY, generation=2, observed_generation=2, replicas=3, available_replicas=3),
        Outcome.READY,
    ),
    (
        DEPLOY,
        live(DEPLOY, generation=2, observed_generation=2, replicas=3, available_replicas=2),
        Outcome.WAITING,
    ),
    (
        DEPLOY,
        live(DEPLOY, generation=3, observed_generation=2, replicas=3, available_replicas=3),
        Outcome.WAITING,
    ),
    (STS, live(STS, generation=1, observed_generation=1, replicas=2, ready_replicas=2), Outcome.READY),
    (STS, live(STS, generation=1, observed_generation=1, replicas=2, ready_replicas=1), Outcome.WAITING),
    (CRD, live(CRD, conditions=_conditions(Established="True")), Outcome.READY),
    (CRD, live(CRD, conditions=_conditions(Established="False")), Outcome.WAITING),
    (NAMESPACE, live(NAMESPACE, phase="Active"), Outcome.READY),
    (NAMESPACE, live(NAMESPACE, phase="Terminating"), Outcome.WAITING),
    (CONFIGMAP, live(CONFIGMAP), Outcome.READY),
    (CONFIGMAP, None, Outcome.WAITING),
    (DEPLOY, None, Outcome.WAITING),
]


@pytest.mark.parametrize(
    ("o", "view", "outcome"), TABLE, ids=[f"{o.kind}-{i}" for i, (o, _, _) in enumerate(TABLE)]
)
def test_each_kind_follows_its_readiness_rule(
    o: object, view: observed.LiveObject | None, outcome: Outcome
) -> None:
    assert isinstance(o, type(JOB))
    assert readiness.cluster_object(o, view).outcome is outcome


# The node controller took Ready from the pod (its node's kubelet stopped reporting):
# the status counts it lost, the containers still report ready.
BLINKED_DEPLOY = live(DEPLOY, observed_generation=1, replicas=1, available_replicas=0, ready_replicas=0)
BLINKED_STS = live(STS, observed_generation=1, replicas=1, available_replicas=0, ready_replicas=0)


@pytest.mark.parametrize("workload", [DEPLOY, STS], ids=["Deployment", "StatefulSet"])
def test_a_workload_whose_pods_ready_the_node_controller_withdrew_stays_ready(workload: object) -> None:
    assert isinstance(workload, type(JOB))
    status = BLINKED_DEPLOY if workload is DEPLOY else BLINKED_STS
    withdrawn = replica_pod(workload, "n1", ready=False, ready_withdrawn=True)
    assert readiness.cluster_object(workload, status, [withdrawn]).outcome is Outcome.READY
    # By its status alone it is not: the pods are what tell a heartbeat gap from an outage.
    assert readiness.cluster_object(workload, status).outcome is Outcome.WAITING


def test_a_status_that_arrives_before_its_pods_withdrawal_keeps_the_workload_ready() -> None:
    still_ready = replica_pod(DEPLOY, "n1")
    assert readiness.cluster_object(DEPLOY, BLINKED_DEPLOY, [still_ready]).outcome is Outcome.READY


@pytest.mark.parametrize(
    "pod",
    [
        replica_pod(DEPLOY, "n1", ready=False),  # the kubelet says its containers are not ready
        replica_pod(DEPLOY, "n1", ready=False, ready_withdrawn=True, deleting=True),
        replica_pod(DEPLOY, "n1", ready=False, ready_withdrawn=True, phase="Pending"),
    ],
    ids=["containers-not-ready", "being-deleted", "pending"],
)
def test_a_workload_whose_pod_is_down_or_going_is_waiting(pod: object) -> None:
    assert isinstance(pod, type(replica_pod(DEPLOY, "n1")))
    verdict = readiness.cluster_object(DEPLOY, BLINKED_DEPLOY, [pod])
    assert verdict.outcome is Outcome.WAITING
    assert verdict.reason == "Deployment grafana 0/1 available"


def test_withdrawn_pods_cover_no_more_replicas_than_they_are() -> None:
    two = live(DEPLOY, observed_generation=1, replicas=2, available_replicas=0, ready_replicas=0)
    one = [replica_pod(DEPLOY, "n1", ready=False, ready_withdrawn=True)]
    both = [*one, replica_pod(DEPLOY, "n2", ready=False, ready_withdrawn=True)]
    assert readiness.cluster_object(DEPLOY, two, one).outcome is Outcome.WAITING
    assert readiness.cluster_object(DEPLOY, two, both).outcome is Outcome.READY


def test_with_min_ready_seconds_the_status_alone_decides() -> None:
    # Available follows ready by minReadySeconds, and the pods cannot say when that passed.
    status = live(
        DEPLOY,
        observed_generation=1,
        replicas=1,
        available_replicas=0,
        ready_replicas=0,
        min_ready_seconds=30,
    )
    withdrawn = replica_pod(DEPLOY, "n1", ready=False, ready_withdrawn=True)
    assert readiness.cluster_object(DEPLOY, status, [withdrawn]).outcome is Outcome.WAITING


def test_an_older_generation_waits_whatever_its_pods_say() -> None:
    status = live(DEPLOY, generation=2, observed_generation=1, replicas=1, ready_replicas=0)
    withdrawn = replica_pod(DEPLOY, "n1", ready=False, ready_withdrawn=True)
    assert readiness.cluster_object(DEPLOY, status, [withdrawn]).outcome is Outcome.WAITING


def test_workload_pods_are_found_by_their_replicaset_or_statefulset() -> None:
    deploy_pod = replica_pod(DEPLOY, "n1")
    sts_pod = replica_pod(STS, "n2")
    stranger = replace(deploy_pod, name="grafana-x-n1", owner_name="grafana-other-5d8f7c9b4")
    not_its_hash = replace(deploy_pod, name="grafana-y-n1", labels={"pod-template-hash": "0"})
    old_sts = replace(sts_pod, name="db-1", owner_uid="uid-db-before")
    elsewhere = replace(deploy_pod, namespace="other")
    world = observed.Observed(
        generation=1,
        nodes={},
        workload_pods=(deploy_pod, sts_pod, stranger, not_its_hash, old_sts, elsewhere),
    )
    assert world.workload_pods_of(live(DEPLOY)) == (deploy_pod,)
    assert world.workload_pods_of(live(STS)) == (sts_pod,)
    assert world.workload_pods_of(live(JOB)) == ()


def test_live_projection_reads_min_ready_seconds() -> None:
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "g"},
        "spec": {"minReadySeconds": 7},
    }
    assert observed.LiveObject.from_body(body).min_ready_seconds == 7


def test_a_failed_job_names_its_reason() -> None:
    verdict = readiness.cluster_object(JOB, live(JOB, conditions=_conditions(Failed="True")))
    assert verdict.reason == "Job build failed: FailedReason"


def test_live_projection_reads_replicas_and_conditions_from_a_body() -> None:
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "grafana", "namespace": "gpu-ns", "generation": 4, "uid": "u1"},
        "spec": {},
        "status": {
            "observedGeneration": 4,
            "availableReplicas": 1,
            "conditions": [{"type": "Available", "status": "True"}],
        },
    }
    view = observed.LiveObject.from_body(body)
    assert (view.replicas, view.available_replicas, view.observed_generation, view.uid) == (1, 1, 4, "u1")
    assert view.conditions["Available"].status == "True"
    assert readiness.cluster_object(DEPLOY, view).outcome is Outcome.READY


def test_wait_for_logs_needs_every_fetched_container_tail_to_match() -> None:
    pattern = logpattern.compile_pattern(r"driver loaded")
    d = ds("driver", "state-driver", logs=r"driver loaded")
    pod = ds_pod(d, "n1", containers=(container("main", ready=True), container("sidecar", ready=True)))
    missing = readiness.daemonset_on_node(d, live(d), [pod], logs={})
    partial = readiness.daemonset_on_node(
        d, live(d), [pod], logs={pod.uid: {"main": "... driver loaded\n", "sidecar": "starting"}}
    )
    matched = readiness.logs_verdict(
        pattern, [pod], {pod.uid: {"main": "driver loaded", "sidecar": "driver loaded"}}
    )
    assert missing.outcome is Outcome.WAITING
    assert [r.name for r in missing.logs_needed] == [pod.name]
    assert missing.logs_needed[0].containers == ("main", "sidecar")
    assert partial.outcome is Outcome.WAITING and partial.logs_needed
    assert matched.outcome is Outcome.READY and not matched.logs_needed


def test_logs_are_not_asked_for_while_the_pod_is_not_ready() -> None:
    d = ds("driver", "state-driver", logs=r"ok")
    verdict = readiness.daemonset_on_node(d, live(d), [ds_pod(d, "n1", ready=False)], logs={})
    assert verdict.outcome is Outcome.WAITING
    assert verdict.logs_needed == ()


def test_the_completed_init_containers_of_a_running_pod_need_not_match() -> None:
    d = ds("driver", "state-driver", logs=r"driver loaded")
    init = container("install", ready=False, terminated_reason="Completed", exit_code=0)
    pod = ds_pod(d, "n1", containers=(init, container("main", ready=True)))
    asked = readiness.daemonset_on_node(d, live(d), [pod], logs={})
    assert asked.logs_needed[0].containers == ("main",)
    done = readiness.daemonset_on_node(d, live(d), [pod], logs={pod.uid: {"main": "driver loaded"}})
    assert done.outcome is Outcome.READY


def test_a_finished_pod_needs_every_container_to_match() -> None:
    p = obj("Pod", "validate", "state-validation", node="n1", logs=r"PASS")
    finished = (
        container("prep", exit_code=0, terminated_reason="Completed"),
        container("check", exit_code=0),
    )
    pod = bare_pod(p, containers=finished)
    partial = readiness.pod_verdict(p, pod, logs={pod.uid: {"check": "PASS"}})
    assert partial.outcome is Outcome.WAITING
    assert partial.logs_needed[0].containers == ("prep", "check")
    full = readiness.pod_verdict(p, pod, logs={pod.uid: {"check": "PASS", "prep": "PASS"}})
    assert full.outcome is Outcome.READY


def test_a_ready_line_followed_by_more_output_is_kept_and_still_matches() -> None:
    build = "".join(f"CC drivers/gpu/file{i}.o\n" for i in range(3000))
    after = "".join(f"heartbeat {i}\n" for i in range(200))
    text = build + "Done, now waiting for signal\n" + after
    kept = readiness.condense(text, "driver loaded|Done, now waiting for signal")
    assert kept == "Done, now waiting for signal"
    assert len(readiness.condense(build, "never printed")) == readiness.LOG_KEEP_BYTES


def test_log_requests_carry_the_pattern_the_engine_condenses_with() -> None:
    pod = ds_pod(ds("driver", "state-driver"), "n1")
    verdict = readiness.logs_verdict(logpattern.compile_pattern("module ready"), [pod], {})
    (request,) = verdict.logs_needed
    assert request.pattern == "module ready" and request.containers == ("main",)
    kept = {pod.uid: {"main": readiness.condense("a\nmodule ready\nb\n", request.pattern)}}
    assert readiness.logs_verdict(logpattern.compile_pattern("module ready"), [pod], kept).ready


def test_a_line_is_cut_before_a_pattern_is_tried_on_it() -> None:
    huge = "x" * (readiness.LOG_LINE_MAX * 10) + " ready"
    assert readiness.condense(huge, "ready$") != "ready"
    assert len(readiness.condense(huge, "ready$")) <= readiness.LOG_KEEP_BYTES


@pytest.mark.parametrize(
    ("tails", "recorded", "outcome"),
    [
        (None, True, Outcome.READY),  # not read yet, the label records the match: keep it
        (None, False, Outcome.WAITING),  # not read yet, nothing recorded: wait for the read
        ({"main": "still building\n"}, True, Outcome.WAITING),  # read: the tail decides
        ({"main": "driver loaded\n"}, False, Outcome.READY),
    ],
)
def test_an_unread_tail_counts_as_matched_only_where_the_node_records_the_match(
    tails: dict[str, str] | None, recorded: bool, outcome: readiness.Outcome
) -> None:
    logged = ds("driver", "state-driver", logs=r"driver loaded")
    pod = ds_pod(logged, "n1")
    logs = {} if tails is None else {pod.uid: tails}
    verdict = readiness.daemonset_on_node(logged, live(logged), [pod], logs=logs, recorded=recorded)
    assert verdict.outcome is outcome
    # The tail is asked for until it has been read and matched.
    assert [r.uid for r in verdict.logs_needed] == ([] if tails and "loaded" in tails["main"] else [pod.uid])

    finished = obj("Pod", "check-n1", "state-check", node="n1", logs=r"driver loaded")
    done = bare_pod(finished, containers=(container(terminated_reason="Completed", exit_code=0),))
    logs = {} if tails is None else {done.uid: tails}
    assert readiness.pod_verdict(finished, done, logs=logs, recorded=recorded).outcome is outcome


def test_a_pod_the_node_records_as_matched_needs_no_read_however_its_log_ran_on() -> None:
    logged = ds("driver", "state-driver", logs=r"driver loaded")
    pod = ds_pod(logged, "n1")
    for logs in ({}, {pod.uid: {"main": "heartbeat\n"}}):
        verdict = readiness.daemonset_on_node(
            logged, live(logged), [pod], logs=logs, matched_before=frozenset({pod.uid})
        )
        assert verdict.outcome is Outcome.READY and verdict.logs_needed == ()
        assert verdict.matched == (pod.uid,)
    # A record of another pod is none of this one's: its tail decides.
    other = readiness.daemonset_on_node(
        logged, live(logged), [pod], logs={pod.uid: {"main": "heartbeat\n"}}, matched_before=frozenset({"x"})
    )
    assert other.outcome is Outcome.WAITING and other.matched == ()


REFUSED = "main: 405 MethodNotAllowed: the server does not allow this method on the requested resource"


def test_a_read_that_failed_is_kept_beside_the_tails_and_a_read_that_worked_replaces_it() -> None:
    assert readiness.after_read(None, {}, "") is None
    failed = readiness.after_read(None, {}, REFUSED)
    assert failed == {readiness.READ_FAILED: REFUSED}
    assert readiness.tails_read(failed) is None
    # Tails kept from an earlier read stay, beside the latest failure only.
    earlier = {"main": "CC part1.o", readiness.READ_FAILED: "main: 500: old"}
    again = readiness.after_read(earlier, {}, "x" * 1000)
    assert again is not None
    assert again["main"] == "CC part1.o"
    assert again[readiness.READ_FAILED] == "x" * readiness.READ_FAILED_MAX
    assert readiness.tails_read(again) == {"main": "CC part1.o"}
    assert readiness.after_read(again, {"main": "CC part2.o"}, "") == {"main": "CC part2.o"}


def test_a_state_waiting_on_logs_it_cannot_read_says_why() -> None:
    pattern = logpattern.compile_pattern("driver loaded")
    d = ds("driver", "state-driver", logs="driver loaded")
    pod = ds_pod(d, "n1")
    logs = {pod.uid: readiness.after_read(None, {}, REFUSED) or {}}
    verdict = readiness.logs_verdict(pattern, [pod], logs)
    assert verdict.outcome is Outcome.WAITING and not verdict.stuck
    assert f"waiting for logs of pod {pod.name}" in verdict.reason
    assert REFUSED in verdict.reason
    assert [r.uid for r in verdict.logs_needed] == [pod.uid]  # asked for again
    plain = readiness.logs_verdict(pattern, [pod], {})
    assert "could not be read" not in plain.reason
    # A node whose label stands for the pod keeps it, as when its tails were never read.
    recorded = readiness.logs_verdict(pattern, [pod], logs, recorded=True)
    assert recorded.outcome is Outcome.READY
    assert [r.uid for r in recorded.logs_needed] == [pod.uid]
    # A failure never passes for a match, whatever the pattern.
    anything = readiness.logs_verdict(logpattern.compile_pattern(".*"), [pod], logs)
    assert anything.outcome is Outcome.WAITING
