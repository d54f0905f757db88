"""The upgrade invariant watcher: its two streams replayed in resourceVersion order.

A node stream that lags the pod stream must not show a moment that never happened (a
driver pod gone from a node sro had cordoned long before, the cordon not delivered yet),
and a real breach of the budget must still be caught, with the nodes' history.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.cluster import Cluster
from support.upgrade_watch import NODES, OPERANDS, Watcher

pytestmark = pytest.mark.unit

PREFIX = "drv-"


def _node(name: str, rv: int, *, cordoned: bool = False) -> dict[str, Any]:
    body = {"kind": "Node", "metadata": {"name": name, "resourceVersion": str(rv)}, "spec": {}}
    if cordoned:
        body["spec"] = {"unschedulable": True}
    return {"type": "MODIFIED", "object": body}


def _pod(uid: str, node: str, rv: int, *, ready: bool = True, gone: bool = False) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    body = {
        "kind": "Pod",
        "metadata": {"name": f"{PREFIX}{uid}", "uid": uid, "namespace": "ns", "resourceVersion": str(rv)},
        "spec": {"nodeName": node},
        "status": {"conditions": conditions},
    }
    return {"type": "DELETED" if gone else "MODIFIED", "object": body}


def _watcher(tmp_path: Path, *, budget: int) -> Watcher:
    watcher = Watcher(
        cluster=Cluster(tmp_path),
        nodes=frozenset({"a", "b"}),
        namespace="ns",
        driver_prefix=PREFIX,
        budget=budget,
    )
    for event in (_node("a", 1), _node("b", 2)):
        watcher.take(event, NODES)
    for event in (_pod("pa", "a", 3), _pod("pb", "b", 4)):
        watcher.take(event, OPERANDS)
    watcher.arm()
    return watcher


async def test_a_node_stream_behind_the_pod_stream_shows_no_moment_that_never_was(tmp_path: Path) -> None:
    # One node at a time: a cordoned (10), its driver replaced (11-12), a uncordoned (13),
    # then b cordoned (14) and its driver deleted (15). The pod stream delivers all of its
    # events before the node stream delivers any.
    watcher = _watcher(tmp_path, budget=1)
    for event in (_pod("pa", "a", 11, gone=True), _pod("pa2", "a", 12), _pod("pb", "b", 15, gone=True)):
        watcher.take(event, OPERANDS)
    assert watcher.violations == []  # held: the node stream has not passed them
    for event in (_node("a", 10, cordoned=True), _node("a", 13), _node("b", 14, cordoned=True)):
        watcher.take(event, NODES)
    await watcher.stop()
    assert watcher.violations == []
    assert watcher.peak == 1
    assert dict(watcher.replaced) == {"a": 1, "b": 1}


async def test_two_nodes_down_at_once_breach_a_budget_of_one_with_their_history(tmp_path: Path) -> None:
    watcher = _watcher(tmp_path, budget=1)
    watcher.take(_node("a", 10, cordoned=True), NODES)
    watcher.take(_pod("pb", "b", 11, gone=True), OPERANDS)  # b's driver went while a was cordoned
    watcher.take(_node("b", 12), NODES)  # the node stream passes 11
    assert len(watcher.violations) == 1
    said = watcher.violations[0]
    assert said.startswith("2 nodes unavailable at resourceVersion 11: ['a', 'b']")
    assert "a rv 10: cordoned" in said and "b rv 11: driver pod pb gone" in said


async def test_changes_held_behind_a_quiet_stream_are_checked_when_the_watcher_stops(tmp_path: Path) -> None:
    watcher = _watcher(tmp_path, budget=1)
    watcher.take(_node("a", 10, cordoned=True), NODES)
    watcher.take(_node("b", 11, cordoned=True), NODES)
    assert watcher.violations == []  # the pod stream has not passed 10 yet
    await watcher.stop()
    said = [v.split(" (")[0] for v in watcher.violations]
    assert said == ["2 nodes unavailable at resourceVersion 11: ['a', 'b']"]
