"""Kernel upgrade: nodes move to a new kernel group and walk the states again.

Covers acceptance test 3: 10 of the nodes move to a fifth kernel; a DaemonSet for it
appears, the DaemonSet of the kernel no node runs any more is deleted, the moved nodes run
their validation again after the move, Events record the added and the removed group,
and the SpecialResource is Ready again.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import specialresources as srs
from conftest import Made, unique
from support import waiting

pytestmark = pytest.mark.e2e

KERNELS = (
    (10, "5.14.0-427.13.1.el9_4.x86_64", "rhel", "9.4"),
    (3, "5.14.0-427.42.1.el9_4.x86_64", "rhel", "9.4"),
    (3, "5.15.0-105-generic", "ubuntu", "22.04"),
    (3, "5.15.0-119-generic", "ubuntu", "22.04"),
)
NEW_KERNEL = "5.14.0-427.50.1.el9_4.x86_64"


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _kernels_of_daemonsets(made: Made, name: str) -> set[str]:
    return {
        ds["spec"]["template"]["spec"]["nodeSelector"][srs.KERNEL_LABEL]
        for ds in srs.owned(made.cluster, "daemonsets", name, namespace=name)
        if not ds["metadata"].get("deletionTimestamp")
    }


async def test_nodes_moved_to_a_fifth_kernel_get_a_new_daemonset_and_walk_again(made: Made) -> None:
    group, nodes = made.group(
        "kup", [{"count": n, "kernel": k, "os": {"id": o, "versionId": v}} for n, k, o, v in KERNELS]
    )
    name = made.sr(srs.manifest(unique("kup"), recipe="simple-kmod", node_selector={srs.GROUP_LABEL: group}))
    await srs.wait_ready(made.cluster, name, within=180)
    assert _kernels_of_daemonsets(made, name) == {k for _, k, _, _ in KERNELS}
    moved = sorted(n for n in nodes if n.startswith(f"{group}-0-"))
    assert len(moved) == 10

    upgraded_at = datetime.now(UTC).replace(microsecond=0)
    made.cluster.set_kernel(moved, NEW_KERNEL)

    wanted = {NEW_KERNEL, *(k for _, k, _, _ in KERNELS[1:])}
    await waiting.wait_for(
        lambda: _kernels_of_daemonsets(made, name) == wanted,
        timeout=120,
        interval=0.5,
        message="a DaemonSet for the new kernel and none for the old one",
    )
    status = await srs.wait_ready(
        made.cluster, name, within=180, where=lambda s: {r["kernel"] for r in s.get("kernels", ())} == wanted
    )
    assert {row["kernel"] for row in status["kernels"]} == wanted
    assert status["nodes"] == {"selected": 19, "complete": 19}

    by_node = srs.pods_by_node_and_state(made.cluster, name)
    for node in moved:
        validation = by_node[node]["state-driver-validation"][0]
        assert _time(validation["metadata"]["creationTimestamp"]) >= upgraded_at, node
        driver = by_node[node]["state-driver"][0]
        assert driver["spec"]["nodeSelector"][srs.KERNEL_LABEL] == NEW_KERNEL

    reasons = [(e["reason"], e.get("note", "")) for e in srs.events(made.cluster, name)]
    assert any(r == "KernelGroupAdded" and NEW_KERNEL in note for r, note in reasons), reasons
    assert any(r == "KernelGroupRemoved" and KERNELS[0][1] in note for r, note in reasons), reasons
