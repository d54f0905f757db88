"""The series dashboards for Kubernetes controllers query, and what sro adds beside them.

Covers: the process and Python collectors and ``sro_build_info`` on the operator's own
registry; client-go's ``workqueue_*`` and ``rest_client_*`` and controller-runtime's
``controller_runtime_reconcile_*`` and ``leader_election_master_status``, fed by the calls
the queue, the API client and the controller already make (so ``sro_*`` and these agree);
the resource a request path names; the per-state node gauge and its stale series. Not
covered: serving them (tests/integration/test_runtime_manager.py).
"""

from __future__ import annotations

import platform

import pytest

import sro
from sro.kube import counting
from sro.observe import metrics, standard
from sro.queue import clock, workqueue

pytestmark = pytest.mark.unit

Q = {"name": standard.CONTROLLER}
C = {"controller": standard.CONTROLLER}


def test_process_python_and_build_series_are_on_the_operator_s_registry() -> None:
    m = metrics.Metrics()
    names = {family.name for family in m.registry.collect()}
    assert {
        "process_resident_memory_bytes",
        "process_cpu_seconds",
        "python_info",
        "python_gc_objects_collected",
    } <= names
    labels = {"version": sro.__version__, "python": platform.python_version()}
    assert m.value("sro_build_info", labels) == 1


def test_controller_runtime_and_client_go_series_exist_at_zero_before_anything_happens() -> None:
    text = metrics.Metrics().exposition().decode()
    for result in standard.RECONCILE_RESULTS:
        assert (
            f'controller_runtime_reconcile_total{{controller="specialresource",result="{result}"}} 0.0'
            in text
        )
    for line in (
        'controller_runtime_reconcile_errors_total{controller="specialresource"} 0.0',
        'workqueue_depth{name="specialresource"} 0.0',
        'workqueue_adds_total{name="specialresource"} 0.0',
        'workqueue_retries_total{name="specialresource"} 0.0',
        'workqueue_unfinished_work_seconds{name="specialresource"} 0.0',
        'workqueue_longest_running_processor_seconds{name="specialresource"} 0.0',
    ):
        assert line in text


def test_the_queue_feeds_both_its_sro_and_its_client_go_series() -> None:
    m, c = metrics.Metrics(), clock.ManualClock()
    q: workqueue.WorkQueue[str] = workqueue.WorkQueue(clock=c, metrics=m)
    q.add("a")
    q.add("b")
    c.advance(2.0)
    assert q.try_get() == "a"
    assert m.value("workqueue_longest_running_processor_seconds", Q) >= 0
    assert m.value("workqueue_unfinished_work_seconds", Q) >= 0
    c.advance(0.5)
    q.done("a")
    q.add_rate_limited("a")
    assert m.value("workqueue_adds_total", Q) == m.value("sro_workqueue_adds_total") == 2
    assert m.value("workqueue_depth", Q) == m.value("sro_workqueue_depth") == 1
    assert m.value("workqueue_retries_total", Q) == 1
    assert m.value("workqueue_queue_duration_seconds_sum", Q) == 2.0
    assert m.value("workqueue_work_duration_seconds_sum", Q) == 0.5
    assert m.value("workqueue_work_duration_seconds_count", Q) == 1
    assert m.value("workqueue_unfinished_work_seconds", Q) == 0


def test_reconcile_results_map_to_controller_runtime_s() -> None:
    m = metrics.Metrics()
    for result in ("success", "requeue_after", "error", "terminal", "timeout"):
        m.reconciled(result=result, seconds=0.25)
    assert m.value("controller_runtime_reconcile_total", {**C, "result": "success"}) == 1
    assert m.value("controller_runtime_reconcile_total", {**C, "result": "requeue_after"}) == 1
    assert m.value("controller_runtime_reconcile_total", {**C, "result": "error"}) == 3
    assert m.value("controller_runtime_reconcile_errors_total", C) == 3
    assert m.value("controller_runtime_terminal_reconcile_errors_total", C) == 1
    assert m.value("controller_runtime_reconcile_time_seconds_count", C) == 5
    m.workers_active(2)
    assert m.value("controller_runtime_active_workers", C) == m.value("sro_active_workers") == 2


def test_requests_are_counted_by_code_method_and_host_and_timed() -> None:
    m = metrics.Metrics()
    m.api_request(
        verb="patch", resource="nodes", code="200", method="PATCH", host="10.0.0.1:6443", seconds=0.2
    )
    m.api_request(
        verb="watch", resource="pods", code="error", method="GET", host="10.0.0.1:6443", seconds=None
    )
    assert (
        m.value("rest_client_requests_total", {"code": "200", "method": "PATCH", "host": "10.0.0.1:6443"})
        == 1
    )
    assert (
        m.value("rest_client_requests_total", {"code": "<error>", "method": "GET", "host": "10.0.0.1:6443"})
        == 1
    )
    assert (
        m.value("rest_client_request_duration_seconds_count", {"verb": "PATCH", "host": "10.0.0.1:6443"}) == 1
    )
    assert m.value("sro_api_requests_total", {"verb": "patch", "resource": "nodes", "code": "200"}) == 1


def test_leadership_shows_in_both_gauges() -> None:
    m = metrics.Metrics()
    m.leading(lease="sro-leader", leading=True)
    assert m.value("leader_election_master_status", {"name": "sro-leader"}) == m.value("sro_leader") == 1
    m.leading(lease="sro-leader", leading=False)
    assert m.value("leader_election_master_status", {"name": "sro-leader"}) == 0


@pytest.mark.parametrize(
    ("path", "resource"),
    [
        ("/api/v1/nodes/gpu-0", "nodes"),
        ("/api/v1/nodes", "nodes"),
        ("/apis/events.k8s.io/v1/namespaces/sro-system/events", "events"),
        ("/api/v1/namespaces/gpu/pods/validate-0/log", "pods/log"),
        ("/apis/sro.dev/v1alpha1/specialresources/gpu/status", "specialresources/status"),
        ("/api/v1/namespaces/gpu", "namespaces"),
        ("/api/v1/namespaces/gpu/status", "namespaces/status"),
        ("/apis/apps/v1/namespaces/gpu/daemonsets?labelSelector=x", "daemonsets"),
        ("/apis/apps/v1", "discovery"),
        ("/api", "discovery"),
        ("/version", "version"),
    ],
)
def test_a_request_sent_without_a_resource_is_labelled_by_its_path(path: str, resource: str) -> None:
    assert counting.resource_of(path) == resource


def test_per_state_node_counts_are_published_with_every_phase_and_leave_no_stale_series() -> None:
    m = metrics.Metrics()
    status = {"nodes": {"selected": 4, "complete": 3}}
    m.specialresource_status(
        name="gpu",
        status=status,
        state_nodes={"state-driver": {"Complete": 4}, "state-validation": {"Complete": 3, "Failed": 1}},
    )

    def nodes(state: str, phase: str) -> float | None:
        labels = {"name": "gpu", "state": state, "phase": phase}
        return m.registry.get_sample_value("sro_specialresource_state_nodes", labels)

    assert (nodes("state-driver", "Complete"), nodes("state-driver", "Failed")) == (4, 0)
    assert (nodes("state-validation", "Failed"), nodes("state-validation", "Pending")) == (1, 0)
    m.specialresource_status(name="gpu", status=status, state_nodes={"state-driver": {"Progressing": 4}})
    assert nodes("state-validation", "Failed") is None
    assert (nodes("state-driver", "Progressing"), nodes("state-driver", "Complete")) == (4, 0)
    m.specialresource_forgotten(name="gpu")
    assert nodes("state-driver", "Progressing") is None


def test_upgrade_nodes_per_phase_come_from_status_upgrade_every_phase_published_and_dropped_with_it() -> None:
    m = metrics.Metrics()
    status = {
        "conditions": [],
        "upgrade": {"phase": "InProgress", "nodes": {"done": 7, "draining": 2, "failed": 1}},
    }
    m.specialresource_status(name="gpu", status=status)

    def nodes(phase: str) -> float | None:
        return m.registry.get_sample_value(
            "sro_specialresource_upgrade_nodes", {"name": "gpu", "phase": phase}
        )

    assert (nodes("done"), nodes("draining"), nodes("failed"), nodes("pending")) == (7, 2, 1, 0)
    m.specialresource_forgotten(name="gpu")
    assert nodes("done") is None
