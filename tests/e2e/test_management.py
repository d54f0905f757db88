"""managementState and deletion: Unmanaged stops all writes, Removed and deletion leave nothing.

Covers acceptance test 10. Unmanaged is proven by the operator's own API request metrics
(no write while it reconciles a change it would otherwise repair); Removed by every
owned object, node label and taint being gone while the SpecialResource stays; deletion
by the SpecialResource itself going away with its finalizer once all that is done.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import specialresources as srs
from conftest import Made, unique
from operator_process import Operator
from support import waiting

pytestmark = pytest.mark.e2e

TAINT = {"key": "e2e.sro.dev/hardware", "value": "kmod", "effect": "NoSchedule"}


def _set_state(made: Made, name: str, state: str) -> None:
    patch = json.dumps({"spec": {"managementState": state}})
    made.cluster.kubectl("patch", "sr", name, "--type=merge", "-p", patch)


def _footprint(made: Made, name: str, group: str) -> dict[str, Any]:
    """Everything of the SpecialResource still in the cluster."""
    nodes = srs.nodes(made.cluster, {srs.GROUP_LABEL: group})
    return {
        "objects": [
            f"{kind}/{o['metadata']['name']}"
            for kind in ("daemonsets", "pods", "serviceaccounts", "namespaces")
            for o in srs.owned(made.cluster, kind, name)
        ],
        "labels": [k for n in nodes for k in srs.sr_labels(n, name)],
        "taints": [t for n in nodes for t in n["spec"].get("taints") or () if t["key"] == TAINT["key"]],
        "namespace": made.cluster.kubectl("get", "namespace", name, check=False).returncode == 0,
    }


def _empty(footprint: dict[str, Any]) -> bool:
    return not any(footprint.values())


async def test_unmanaged_stops_writes_and_removed_then_deletion_leave_nothing(
    made: Made, operator: Operator
) -> None:
    group, _ = made.group(
        "mgmt",
        [{"count": 3, "kernel": "5.14.0-427.13.1.el9_4.x86_64", "os": {"id": "rhel", "versionId": "9.4"}}],
    )
    body = srs.manifest(
        unique("mgmt"),
        recipe="simple-kmod",
        node_selector={srs.GROUP_LABEL: group},
        extra_spec={"taints": [TAINT]},
    )
    name = made.sr(body)
    await srs.wait_ready(made.cluster, name, within=180)
    nodes = srs.nodes(made.cluster, {srs.GROUP_LABEL: group})
    assert all(any(t["key"] == TAINT["key"] for t in n["spec"].get("taints") or ()) for n in nodes)

    _set_state(made, name, "Unmanaged")
    await waiting.wait_for(
        lambda: srs.status(made.cluster, name).get("phase") == "Unmanaged",
        timeout=60,
        message="status says Unmanaged",
    )
    writes = operator.writes()
    reconciles = operator.reconciles()
    daemonset = srs.owned(made.cluster, "daemonsets", name, namespace=name)[0]["metadata"]["name"]
    made.cluster.kubectl("delete", "daemonset", daemonset, "-n", name)
    await waiting.wait_for(
        lambda: operator.reconciles() > reconciles, timeout=60, message="the operator reconciled the deletion"
    )
    assert operator.writes() == writes
    assert made.cluster.kubectl("get", "daemonset", daemonset, "-n", name, check=False).returncode != 0

    _set_state(made, name, "Removed")
    await waiting.wait_for(
        lambda: _empty(_footprint(made, name, group)),
        timeout=120,
        interval=0.5,
        message="everything of the SpecialResource removed",
    )
    await waiting.wait_for(
        lambda: srs.status(made.cluster, name).get("phase") == "Removed",
        timeout=60,
        message="status says Removed",
    )
    assert srs.get(made.cluster, name) is not None

    _set_state(made, name, "Managed")
    await srs.wait_ready(made.cluster, name, within=180)
    srs.delete(made.cluster, name)
    await waiting.wait_for(
        lambda: srs.get(made.cluster, name) is None,
        timeout=120,
        interval=0.5,
        message="the SpecialResource let go after cleaning up",
    )
    assert _empty(_footprint(made, name, group)), _footprint(made, name, group)
