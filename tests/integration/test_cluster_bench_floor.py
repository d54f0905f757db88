"""The labelled floor's node writes (hack/lib/simcluster/converge_floor.py) on the real API server.

``hack/bench converge --labelled-floor`` prices the node label writes the contract asks of
an operator by sending them beside the floor's objects: one merge patch per node and batch
of labels (``label_batches``: one per step of the longest chain of states). Here: each batch
lands on each node in its own patch (the audit log counts them), no other label of the node
changes, and ``unlabel_all`` takes exactly those labels off again.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import Any

import pytest
from simcluster import audit, controlplane, converge_floor, kube, layout

pytestmark = pytest.mark.integration

ADMIN = "sro-admin"  # the harness's user (admin kubeconfig); the node controller and devsim patch nodes too


def _labels(cluster: Any, node: str) -> dict[str, str]:
    return dict(cluster.kubectl_json("get", "node", node)["metadata"].get("labels") or {})


async def test_the_labelled_floor_patches_each_batch_of_labels_of_each_node_once_and_takes_them_off(
    cluster: Any, node_pool: Callable[..., Any]
) -> None:
    pool = node_pool(count=2)
    nodes = list(pool.nodes)
    before = {n: _labels(cluster, n) for n in nodes}
    run = layout.RunDir(cluster.dir)
    state = controlplane.State.load(run)
    assert state is not None
    start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1)
    async with kube.Kube(server=state.server, run=run) as client:
        began = time.monotonic()
        batches = [["state-a"], ["state-b", "complete"]]
        sent = await converge_floor.label_all(client, nodes, batches, concurrency=2, over=1.0)
        assert sent == 4
        assert time.monotonic() - began >= 0.75  # the last of 4 goes out 3/4 of the way through
        for n in nodes:
            labels = _labels(cluster, n)
            assert labels == {
                **before[n],
                f"{converge_floor.LABEL_PREFIX}/state-a": "ready",
                f"{converge_floor.LABEL_PREFIX}/state-b": "ready",
                f"{converge_floor.LABEL_PREFIX}/complete": "ready",
            }
        patches = [
            w
            for w in audit.since(audit.read(cluster.audit_log), start)
            if w.verb == "patch" and w.resource == "nodes" and w.name in nodes and w.user == ADMIN
        ]
        assert sorted(w.name for w in patches) == sorted(nodes * 2)  # one patch per node and batch
        await converge_floor.unlabel_all(client, nodes, ["state-a", "state-b", "complete"])
    assert {n: _labels(cluster, n) for n in nodes} == before
