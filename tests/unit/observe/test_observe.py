"""Metrics registry (values readable, finite labels pre-created at zero), log context binding, health."""

import json

import pytest
import structlog

from sro.observe import logs, metrics

pytestmark = pytest.mark.unit


def test_reconcile_results_exist_at_zero_before_any_reconcile() -> None:
    m = metrics.Metrics()
    text = m.exposition().decode()
    for r in metrics.RESULTS:
        assert f'sro_reconcile_total{{result="{r}"}} 0.0' in text


def test_each_registry_is_independent() -> None:
    a, b = metrics.Metrics(), metrics.Metrics()
    a.reconciled(result="success", seconds=0.1)
    assert a.value("sro_reconcile_total", {"result": "success"}) == 1
    assert b.value("sro_reconcile_total", {"result": "success"}) == 0


def test_watch_labels_are_created_per_resource_when_a_reflector_starts() -> None:
    m = metrics.Metrics()
    m.watch_started("nodes")
    assert (
        m.registry.get_sample_value("sro_watch_relists_total", {"resource": "nodes", "reason": "expired"})
        == 0
    )
    m.watch_relisted(resource="nodes", reason="expired")
    assert m.total("sro_watch_relists_total", resource="nodes") == 1


def test_api_requests_are_counted_by_verb_resource_and_code() -> None:
    m = metrics.Metrics()
    m.api_request(verb="patch", resource="configmaps", code="200")
    m.api_request(verb="patch", resource="configmaps", code="200")
    m.api_request(verb="get", resource="configmaps", code="404")
    assert m.total("sro_api_requests_total", verb="patch") == 2
    assert m.value("sro_api_requests_total", {"verb": "get", "resource": "configmaps", "code": "404"}) == 1


def test_every_line_of_a_reconcile_carries_its_key(capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure(format="json", level="info")
    try:
        log = structlog.get_logger("t")
        with logs.bind_reconcile("gpu"):
            log.info("inside")
        log.info("outside")
    finally:
        structlog.reset_defaults()
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert lines[0]["key"] == "gpu" and lines[0]["sr"] == "gpu" and lines[0]["event"] == "inside"
    assert "key" not in lines[1]


def test_specialresource_conditions_follow_status_and_leave_no_stale_series() -> None:
    m = metrics.Metrics()
    degraded = {
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "StateFailed"},
            {"type": "Degraded", "status": "True", "reason": "StateFailed"},
        ],
        "nodes": {"selected": 5, "complete": 3},
    }
    m.specialresource_status(name="gpu", status=degraded)
    cond = "sro_specialresource_condition"
    assert m.value(cond, {"name": "gpu", "type": "Degraded", "reason": "StateFailed"}) == 1
    assert m.value(cond, {"name": "gpu", "type": "Ready", "reason": "StateFailed"}) == 0
    assert m.value("sro_specialresource_nodes", {"name": "gpu", "kind": "complete"}) == 3

    healthy = {
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "AllStatesComplete"},
            {"type": "Degraded", "status": "False", "reason": "AsExpected"},
        ],
        "nodes": {"selected": 5, "complete": 5},
    }
    m.specialresource_status(name="gpu", status=healthy)
    text = m.exposition().decode()
    assert 'reason="StateFailed"' not in text
    assert m.value(cond, {"name": "gpu", "type": "Ready", "reason": "AllStatesComplete"}) == 1

    m.specialresource_forgotten(name="gpu")
    assert 'name="gpu"' not in m.exposition().decode()
