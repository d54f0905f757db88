"""devsim reports each node's status once a period, as a kubelet does (hack/lib/simcluster/node_status.py)."""

from __future__ import annotations

import datetime
import itertools
import random
from typing import Any

import pytest
from simcluster import node_status

pytestmark = pytest.mark.unit

PERIOD, JITTER = 300.0, 10.0


def _reports(
    schedule: node_status.Schedule, *, until: float, names: tuple[str, ...] = (), events_every: float = 0.0
) -> dict[str, list[float]]:
    """Each node's report times, stepping a clock second by second to ``until``; with
    ``events_every``, every node is seen again that often (its other writers' events)."""
    times: dict[str, list[float]] = {}
    now = 0.0
    while now <= until:
        if events_every and now % events_every == 0:
            for name in names:
                schedule.seen(name, now=now)
        for name in schedule.take(now=now):
            times.setdefault(name, []).append(now)
        now += 1.0
    return times


def _fleet(count: int, *, seed: int = 1) -> tuple[node_status.Schedule, list[str]]:
    schedule = node_status.Schedule(period=PERIOD, jitter=JITTER, rng=random.Random(seed))
    names = [f"node-{i:04d}" for i in range(count)]
    for name in names:
        assert schedule.seen(name, now=0.0)
    return schedule, names


def test_every_node_reports_once_a_period_whatever_else_happens_to_it() -> None:
    schedule, names = _fleet(500)
    # Every node seen again every 7 s (labels, capacity, the reports' own events): a kwok
    # Stage re-armed on each of them; here the due time stays.
    times = _reports(schedule, until=3_000.0, names=tuple(names), events_every=7.0)
    assert sorted(times) == names
    for name, seen in times.items():
        assert seen[0] < PERIOD + 1.0, name  # the first within a period of being seen
        gaps = [b - a for a, b in itertools.pairwise(seen)]
        assert gaps, name
        assert all(PERIOD <= g <= PERIOD + JITTER + 1.0 for g in gaps), (name, gaps)
    total = sum(len(t) for t in times.values())
    per_second = total / 3_000.0
    # 500 nodes at one report per 300 to 310 s: about 1.6 a second, never twice that.
    assert 500 / (PERIOD + JITTER) * 0.8 < per_second < 500 / PERIOD * 1.2, per_second


def test_first_reports_are_spread_over_the_period() -> None:
    schedule, _ = _fleet(1_000, seed=7)
    firsts = sorted(t[0] for t in _reports(schedule, until=PERIOD).values())
    assert len(firsts) == 1_000
    thirds = [sum(1 for t in firsts if k * PERIOD / 3 <= t < (k + 1) * PERIOD / 3) for k in range(3)]
    assert all(250 < n < 420 for n in thirds), thirds  # not all at once, as a restart of every kubelet


def test_a_node_gone_reports_no_more_and_one_back_is_scheduled_again() -> None:
    schedule, names = _fleet(3)
    schedule.gone(names[0])
    assert len(schedule) == 2
    times = _reports(schedule, until=PERIOD * 2)
    assert names[0] not in times and sorted(times) == names[1:]
    assert schedule.seen(names[0], now=PERIOD * 2)
    assert not schedule.seen(names[0], now=PERIOD * 2 + 1)
    assert schedule.next_due() is not None


def test_a_report_stamps_every_condition_and_nothing_else() -> None:
    node = {
        "metadata": {"name": "n1"},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-01T00:00:00Z"},
                {"type": "MemoryPressure", "status": "False"},
                "not a condition",
            ],
            "images": [{"names": ["x"], "sizeBytes": 1}],
        },
    }
    now = datetime.datetime(2026, 12, 5, 12, 0, 1, tzinfo=datetime.UTC)
    assert node_status.report(node, now=now) == {
        "status": {
            "conditions": [
                {"type": "Ready", "lastHeartbeatTime": "2026-12-05T12:00:01Z"},
                {"type": "MemoryPressure", "lastHeartbeatTime": "2026-12-05T12:00:01Z"},
            ]
        }
    }


def _node(name: str, *, ready: str = "True", kwok: bool = True) -> dict[str, Any]:
    annotations = {"kwok.x-k8s.io/node": "fake"} if kwok else {}
    return {
        "metadata": {"name": name, "annotations": annotations},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


def test_only_ready_nodes_kwok_runs_are_reported() -> None:
    known: dict[str, dict[str, Any]] = {}  # devsim's view, as its informer keeps it
    reporter = node_status.Reporter(client=None, known=known, clock=lambda: 0.0)  # type: ignore[arg-type]

    def event(kind: str, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        if kind == "DELETED":
            known.pop(name, None)
        else:
            known[name] = node
        reporter.on_node(kind, node)

    def reporting() -> list[str]:
        return sorted(n for n in known if node_status.reporting(known.get(n)))

    event("ADDED", _node("a"))
    event("ADDED", _node("b", ready="Unknown"))
    event("ADDED", _node("c", kwok=False))
    assert reporting() == ["a"]
    assert len(reporter.schedule) == 2  # b reports again once kwok has it Ready
    event("MODIFIED", _node("a", ready="False"))
    assert reporting() == []
    event("MODIFIED", _node("b"))
    assert reporting() == ["b"]
    event("DELETED", _node("b"))
    assert reporting() == [] and len(reporter.schedule) == 1
    assert not node_status.reporting(None)
