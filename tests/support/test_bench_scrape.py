"""``hack/bench converge`` reads its figures from one ``/metrics`` text: the operator's own
exposition, rendered by its registry, read back by ``simcluster.scrape``."""

from __future__ import annotations

import pytest
from simcluster import scrape

from sro.observe import metrics

pytestmark = pytest.mark.unit


def _exposed(m: metrics.Metrics) -> scrape.Scrape:
    return scrape.Scrape(m.exposition().decode())


def test_requests_steps_and_streams_are_read_from_one_exposition() -> None:
    m = metrics.Metrics()
    for _ in range(3):
        m.api_request(verb="patch", resource="nodes", code="200")
    m.api_request(verb="patch", resource="nodes", code="409")
    m.api_request(verb="get", resource="pods", code="200")
    for seconds in (0.5, 1.5):
        m.reconcile_step("read", seconds)
        m.reconcile_step("plan", seconds / 10)
    m.watch_started("nodes")
    for _ in range(4):
        m.watch_event(resource="nodes")
    m.watch_read(resource="nodes")
    m.watch_restarted(resource="pods", reason="closed_early")
    before = _exposed(m)
    m.watch_event(resource="pods")
    s = _exposed(m)
    assert s.requests() == {("patch", "nodes"): 4, ("get", "pods"): 1}
    assert s.step_seconds()["read"] == (pytest.approx(2.0), 2)
    assert s.step_seconds()["plan"] == (pytest.approx(0.2), 2)
    assert s.passes() == 2
    assert s.streams_since(scrape.Scrape("")) == {
        "watch_events": {"nodes": 4, "pods": 1},
        "watch_wakes": {},
        "watch_reads": {"nodes": 1},
    }
    assert s.streams_since(before) == {"watch_events": {"pods": 1}, "watch_wakes": {}, "watch_reads": {}}
    assert s.restarts_since(before) == {}
    assert s.restarts_since(scrape.Scrape("")) == {"pods closed_early": 1}
    assert s.watch_restarts() == {"pods closed_early": 1}


def test_a_name_is_matched_whole_not_as_a_prefix_of_another_series() -> None:
    m = metrics.Metrics()
    m.loop_lag(0.3)
    m.loop_lag(2.0)
    m.loop_lag(0.01)
    s = _exposed(m)
    # sro_event_loop_lag_seconds_count and _sum share the prefix of _bucket's name
    assert s.stalls() == {"probes": 3, "late_0.25s": 2, "late_1s": 1, "late_seconds": pytest.approx(2.31)}
    assert [v for _, v in s.samples("sro_event_loop_lag_seconds_count")] == [3]


def test_collections_by_generation_count_the_long_ones() -> None:
    m = metrics.Metrics()
    m.gc_paused(generation=0, seconds=0.001)
    m.gc_paused(generation=1, seconds=0.3)
    m.gc_paused(generation=1, seconds=1.2)
    got = _exposed(m).collections()
    assert got["0"] == {"count": 1, "late_0.25s": 0, "late_1s": 0, "seconds": pytest.approx(0.001)}
    assert got["1"] == {"count": 2, "late_0.25s": 2, "late_1s": 1, "seconds": pytest.approx(1.5)}


def test_busy_while_a_worker_runs_and_when_the_operator_did_not_answer() -> None:
    m = metrics.Metrics()
    assert not _exposed(m).busy()
    m.workers_active(1)
    assert _exposed(m).busy()
    m.workers_active(-1)
    m.queue_depth(2)
    assert _exposed(m).busy()
    assert scrape.Scrape("").busy()
