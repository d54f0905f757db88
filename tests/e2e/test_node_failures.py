"""Nodes that cannot complete: a failing validation, and a kernel without a driver image.

Covers acceptance tests 8 and 9. A broken node fails the driver validation: that node is
Failed with the pod's reason, the others complete, the SpecialResource is Degraded naming
the node, and stays Degraded while sro recreates the failed pod (a retry is no progress);
once the node is repaired its validation is retried and everything is Ready.
A node whose kernel has no driver image keeps its driver state Progressing with
``ImagePullBackOff`` named, while the other nodes complete.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import specialresources as srs
from conftest import Made, unique
from support import cluster as cluster_mod
from support import waiting

pytestmark = pytest.mark.e2e

RHEL = {"kernel": "5.14.0-427.13.1.el9_4.x86_64", "os": {"id": "rhel", "versionId": "9.4"}}
UBUNTU_NO_IMAGE = {"kernel": "5.15.0-119-generic", "os": {"id": "ubuntu", "versionId": "22.04"}}
MISSING = "quay.io/openshift-psap/simple-kmod:5.15.0-119-generic"


def _row(status: dict[str, object], state: str) -> dict[str, object]:
    rows = status.get("states") or []
    assert isinstance(rows, list)
    return next(r for r in rows if r["name"] == state)


async def test_a_broken_node_fails_validation_alone_and_completes_once_repaired(made: Made) -> None:
    group, nodes = made.group("brk", [{"count": 2, **RHEL}, {"count": 1, "broken": True, **RHEL}])
    broken = next(n for n in nodes if n.startswith(f"{group}-1-"))
    name = made.sr(srs.manifest(unique("brk"), recipe="simple-kmod", node_selector={srs.GROUP_LABEL: group}))

    cond = await srs.wait_degraded(made.cluster, name, "StateFailed", within=120)
    assert broken in cond["message"], cond["message"]
    status = srs.status(made.cluster, name)
    row = _row(status, "state-driver-validation")
    assert row["phase"] == "Failed"
    failing = row["failingNodes"]
    assert isinstance(failing, list) and [f["node"] for f in failing] == [broken]
    assert failing[0]["reason"], failing

    healthy = [n for n in nodes if n != broken]

    def healthy_complete() -> dict[str, str | None] | None:
        """Each node's complete label, once every healthy node has it (they finish validating
        on their own time, which may come after the broken node's failure)."""
        done = {
            node["metadata"]["name"]: srs.sr_labels(node, name).get(f"{name}.sro.dev/complete")
            for node in srs.nodes(made.cluster, {srs.GROUP_LABEL: group})
        }
        return done if all(done.get(n) == "true" for n in healthy) else None

    done = await waiting.wait_for(healthy_complete, timeout=60, message="the healthy nodes complete")
    assert done[broken] is None

    def validation_pod_uid() -> str:
        on_broken = [
            p
            for p in srs.pods(made.cluster, name)
            if p["spec"].get("nodeName") == broken and "validation" in p["metadata"]["name"]
        ]
        return on_broken[0]["metadata"]["uid"] if on_broken else ""

    first = await waiting.wait_for(validation_pod_uid, timeout=30, message="the broken node's validation pod")
    phases: set[object] = set()

    def retried() -> bool:
        phases.add(srs.status(made.cluster, name).get("phase"))
        return validation_pod_uid() not in ("", first)

    await waiting.wait_for(retried, timeout=60, interval=0.5, message="sro recreated the failed pod")
    assert phases == {"Degraded"}, phases

    made.cluster.kubectl("annotate", "node", broken, "sim.sro.dev/broken-")
    status = await srs.wait_ready(made.cluster, name, within=180)
    assert status["nodes"] == {"selected": 3, "complete": 3}


@pytest.fixture
def missing_image(cluster: cluster_mod.Cluster) -> Iterator[str]:
    cluster.add_missing_image(MISSING)
    try:
        yield MISSING
    finally:
        cluster.remove_missing_image(MISSING)


async def test_a_kernel_without_a_driver_image_keeps_its_nodes_progressing_with_the_reason(
    made: Made, missing_image: str
) -> None:
    group, nodes = made.group("img", [{"count": 2, **RHEL}, {"count": 2, **UBUNTU_NO_IMAGE}])
    stuck = {n for n in nodes if n.startswith(f"{group}-1-")}
    name = made.sr(srs.manifest(unique("img"), recipe="simple-kmod", node_selector={srs.GROUP_LABEL: group}))

    def others_complete_and_reason_shown() -> dict[str, object] | None:
        status = srs.status(made.cluster, name)
        row = _row(status, "state-driver")
        nodes_done = (status.get("nodes") or {}).get("complete")
        return row if nodes_done == 2 and "ImagePullBackOff" in str(row.get("message")) else None

    row = await waiting.wait_for(
        others_complete_and_reason_shown,
        timeout=120,
        interval=0.5,
        message="the other nodes complete and ImagePullBackOff named",
    )
    assert row["phase"] == "Progressing"
    assert any(n in str(row["message"]) for n in stuck), row["message"]
    for node in srs.nodes(made.cluster, {srs.GROUP_LABEL: group}):
        complete = srs.sr_labels(node, name).get(f"{name}.sro.dev/complete")
        assert complete == (None if node["metadata"]["name"] in stuck else "true")
