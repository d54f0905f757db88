"""``observe.children``: a labelled child looked up once is the child ``labels()`` gives,
and what it counts is what the registry exposes."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter

from sro.observe import children, metrics

pytestmark = pytest.mark.unit


def test_each_child_is_the_one_labels_gives_and_looked_up_once() -> None:
    registry = CollectorRegistry()
    counter = Counter("things", "Things", ["verb", "resource"], registry=registry)
    lookup = children.Children(counter)
    first = lookup("get", "pods")
    assert first is counter.labels(verb="get", resource="pods")
    assert lookup("get", "pods") is first
    assert lookup("pods", "get") is not first  # values go in the order of the label names
    for _ in range(3):
        lookup("get", "pods").inc()
    assert registry.get_sample_value("things_total", {"verb": "get", "resource": "pods"}) == 3


def test_the_hot_paths_count_into_the_exposed_series() -> None:
    m = metrics.Metrics()
    for _ in range(2):
        m.watch_event(resource="nodes")
        m.api_request(verb="patch", resource="nodes", code="200", method="PATCH", host="h:1", seconds=0.01)
    m.api_limited(verb="PATCH", host="h:1", seconds=0.5)
    m.cache_size(resource="nodes", size=7)
    m.queue_added()
    value = m.registry.get_sample_value
    assert value("sro_watch_events_total", {"resource": "nodes"}) == 2
    assert value("sro_api_requests_total", {"verb": "patch", "resource": "nodes", "code": "200"}) == 2
    assert value("rest_client_requests_total", {"code": "200", "method": "PATCH", "host": "h:1"}) == 2
    assert value("rest_client_request_duration_seconds_count", {"verb": "PATCH", "host": "h:1"}) == 2
    assert value("rest_client_rate_limiter_duration_seconds_count", {"verb": "PATCH", "host": "h:1"}) == 1
    assert value("sro_cache_objects", {"resource": "nodes"}) == 7
    assert value("workqueue_adds_total", {"name": "specialresource"}) == 1
