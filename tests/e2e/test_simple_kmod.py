"""simple-kmod end to end: one driver DaemonSet per kernel, every node walked, Ready in kubectl.

Covers acceptance test 1 (30 nodes, 3 kernels) against the real cluster and a real
``sro run``: the per-kernel DaemonSets (kernel in the nodeSelector and the image tag), the
node labels of both states, and the printer columns.
"""

from __future__ import annotations

import time

import pytest
import specialresources as srs
from conftest import Made, unique

pytestmark = pytest.mark.e2e

KERNELS = (
    ("5.14.0-427.13.1.el9_4.x86_64", "rhel", "9.4"),
    ("5.14.0-284.30.1.el9_2.x86_64", "rhel", "9.2"),
    ("5.15.0-119-generic", "ubuntu", "22.04"),
)


async def test_simple_kmod_on_30_nodes_with_3_kernels_becomes_ready_with_one_daemonset_per_kernel(
    made: Made,
) -> None:
    group, nodes = made.group(
        "kmod",
        [
            {"count": 10, "kernel": k, "os": {"id": os_id, "versionId": v}, "pci": []}
            for k, os_id, v in KERNELS
        ],
    )
    assert len(nodes) == 30
    start = time.monotonic()
    name = made.sr(srs.manifest(unique("kmod"), recipe="simple-kmod", node_selector={srs.GROUP_LABEL: group}))

    status = await srs.wait_ready(made.cluster, name, within=240)
    took = time.monotonic() - start
    print(f"simple-kmod on 30 nodes Ready after {took:.1f}s")

    assert status["nodes"] == {"selected": 30, "complete": 30}
    assert sorted(row["kernel"] for row in status["kernels"]) == sorted(k for k, _, _ in KERNELS)
    daemonsets = srs.owned(made.cluster, "daemonsets", name, namespace=name)
    assert len(daemonsets) == 3
    seen_kernels = set()
    for ds in daemonsets:
        selector = ds["spec"]["template"]["spec"]["nodeSelector"]
        kernel = selector[srs.KERNEL_LABEL]
        seen_kernels.add(kernel)
        image = ds["spec"]["template"]["spec"]["containers"][0]["image"]
        assert image.endswith(f":{kernel}"), image
    assert seen_kernels == {k for k, _, _ in KERNELS}

    for node in srs.nodes(made.cluster, {srs.GROUP_LABEL: group}):
        assert srs.sr_labels(node, name) == {
            f"{name}.sro.dev/state-driver": "ready",
            f"{name}.sro.dev/state-driver-validation": "ready",
            f"{name}.sro.dev/complete": "true",
        }, node["metadata"]["name"]

    row = srs.printed_row(made.cluster, name)
    assert row[1:3] == ["Ready", "30/30"], row
