"""Readiness rules per kind (contract section 5) for cluster-wide objects, one at a time:
Jobs, Deployments, StatefulSets, CRDs, Namespaces and other kinds, and the live
projection they are judged on.

A workload whose pods' Ready the node controller withdrew (their node's kubelet stopped
reporting) stays ready while the pods' containers still report ready: by its status
alone it is not, and the pods are what tell a heartbeat gap from an outage. Covers that
and its bounds (withdrawn pods cover no more replicas than they are, with
``minReadySeconds`` the status alone decides, an older generation waits), and how a
workload's pods are found.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from builders import live, obj, replica_pod

from sro.plan import live_records, observed, readiness
from sro.plan.readiness import Outcome

pytestmark = pytest.mark.unit


def _conditions(**status: str) -> dict[str, live_records.ObjectCondition]:
    return {k: live_records.ObjectCondition(status=v, reason=f"{k}Reason") for k, v in status.items()}


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
    o: object, view: live_records.LiveObject | None, outcome: Outcome
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
    assert live_records.LiveObject.from_body(body).min_ready_seconds == 7


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
    view = live_records.LiveObject.from_body(body)
    assert (view.replicas, view.available_replicas, view.observed_generation, view.uid) == (1, 1, 4, "u1")
    assert view.conditions["Available"].status == "True"
    assert readiness.cluster_object(DEPLOY, view).outcome is Outcome.READY
