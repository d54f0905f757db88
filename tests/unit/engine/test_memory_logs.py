"""The memory of log reads: when each waiting pod's tails were asked for, kept while the pod is."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sro.engine import memory as memory_
from sro.model import progress, views
from sro.plan import actions, observed

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def request(uid: str) -> progress.LogRequest:
    return progress.LogRequest(namespace="ns", name=f"pod-{uid}", uid=uid, containers=("main",))


def asked(*uids: str) -> actions.Plan:
    status: Any = {}
    return actions.Plan(
        apply=(), delete=(), node_labels=(), status=status, logs_needed=tuple(request(u) for u in uids)
    )


def test_a_pass_records_when_it_asked_for_each_tail_and_forgets_pods_gone() -> None:
    memory = memory_.Memory()
    memory.planned(asked("a", "b"), now=T0)
    later = T0 + timedelta(seconds=3)
    memory.planned(asked("b"), now=later)
    assert memory.log_reads == {"a": T0, "b": later}

    memory.logs = {"a": {"main": "tail"}, "b": {"main": "tail"}}
    memory.observed(
        observed.Observed(generation=1, nodes={}, pods=(views.PodView(namespace="ns", name="b", uid="b"),))
    )
    assert memory.log_reads == {"b": later}
    assert set(memory.logs) == {"b"}
