"""Two SpecialResources of one recipe whose selectors overlap: the older keeps the shared nodes.

The later one gets ``ConflictingNodeSelector`` naming the other and exactly the
overlapping nodes, deploys on none of them (no pod, no node label) and still serves its
own nodes; the earlier one is untouched (its pods on the shared nodes are the very same
pods). Precedence goes by creation time whichever of the two was edited into the overlap:
when the older one's selector grows over the newer one's node, the newer one is taken off
that node, and it comes back when the overlap ends.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import specialresources as srs
from conftest import Made, unique
from support import waiting

pytestmark = pytest.mark.e2e

RHEL = {"kernel": "5.14.0-427.13.1.el9_4.x86_64", "os": {"id": "rhel", "versionId": "9.4"}}
SIDE = "e2e.sro.dev/conflict-side"
HOSTNAME = "kubernetes.io/hostname"


def _node(made: Made, name: str) -> dict[str, Any]:
    return made.cluster.kubectl_json("get", "node", name)


def _complete_on(made: Made, sr: str, node: str) -> bool:
    return srs.sr_labels(_node(made, node), sr).get(f"{sr}.sro.dev/complete") == "true"


def _pod_uids_on(made: Made, namespace: str, node: str) -> set[str]:
    pods = srs.pods(made.cluster, namespace)
    return {p["metadata"]["uid"] for p in pods if p["spec"].get("nodeName") == node}


def _nodes_with_pods(made: Made, namespace: str) -> set[str]:
    return {
        p["spec"].get("nodeName", "")
        for p in srs.pods(made.cluster, namespace)
        if not p["metadata"].get("deletionTimestamp")
    }


async def test_the_later_special_resource_yields_every_overlapping_node_and_keeps_its_own(made: Made) -> None:
    group, nodes = made.group(
        "ovl",
        [
            {"count": 1, "labels": {f"{SIDE}-a": "yes"}, **RHEL},
            {"count": 2, "labels": {f"{SIDE}-a": "yes", f"{SIDE}-b": "yes"}, **RHEL},
            {"count": 1, "labels": {f"{SIDE}-b": "yes"}, **RHEL},
        ],
    )
    pool = [sorted(n for n in nodes if n.startswith(f"{group}-{i}-")) for i in range(3)]
    (only_a,), shared, (only_b,) = pool
    older = made.sr(
        srs.manifest(
            unique("a-older"),
            recipe="simple-kmod",
            node_selector={srs.GROUP_LABEL: group, f"{SIDE}-a": "yes"},
        )
    )
    await srs.wait_ready(made.cluster, older, within=180)
    before = {node: _pod_uids_on(made, older, node) for node in shared}

    newer = made.sr(
        srs.manifest(
            unique("b-newer"),
            recipe="simple-kmod",
            node_selector={srs.GROUP_LABEL: group, f"{SIDE}-b": "yes"},
        )
    )
    cond = await srs.wait_degraded(made.cluster, newer, "ConflictingNodeSelector", within=90)
    assert older in cond["message"], cond["message"]
    for node in shared:
        assert node in cond["message"], cond["message"]
    assert only_a not in cond["message"] and only_b not in cond["message"], cond["message"]

    await waiting.wait_for(
        lambda: _complete_on(made, newer, only_b),
        timeout=180,
        interval=0.5,
        message=f"{newer} completes on {only_b}, its own node",
    )
    assert _nodes_with_pods(made, newer) == {only_b}
    for node in (only_a, *shared):
        assert srs.sr_labels(_node(made, node), newer) == {}, node
    # Still Degraded once settled: the conflict stands.
    assert srs.condition(srs.status(made.cluster, newer), "Degraded")["reason"] == "ConflictingNodeSelector"

    older_status = srs.status(made.cluster, older)
    assert srs.ready_condition(older_status) and older_status["nodes"] == {"selected": 3, "complete": 3}
    for node in shared:
        assert _pod_uids_on(made, older, node) == before[node], f"{older}'s pods on {node} were left alone"


async def test_an_older_special_resource_edited_over_a_newer_ones_node_takes_it_and_gives_it_back(
    made: Made,
) -> None:
    group, nodes = made.group("edit", [{"count": 2, **RHEL}])
    first_node, second_node = nodes
    older = made.sr(
        srs.manifest(
            unique("a-older"),
            recipe="simple-kmod",
            node_selector={srs.GROUP_LABEL: group, HOSTNAME: first_node},
        )
    )
    # Created once the older one is Ready: creation times (whole seconds) then differ, and
    # precedence does not fall back to names.
    await srs.wait_ready(made.cluster, older, within=180)
    newer = made.sr(
        srs.manifest(
            unique("b-newer"),
            recipe="simple-kmod",
            node_selector={srs.GROUP_LABEL: group, HOSTNAME: second_node},
        )
    )
    await srs.wait_ready(made.cluster, newer, within=180)
    created = {n: srs.get(made.cluster, n)["metadata"]["creationTimestamp"] for n in (older, newer)}  # type: ignore[index]
    # Timestamps have whole seconds; on a tie the name decides, and the names sort the same way.
    assert (created[older], older) < (created[newer], newer), created
    assert _nodes_with_pods(made, newer) == {second_node}

    # The older one grows over the newer one's node: the newer one yields it.
    grow = json.dumps({"spec": {"nodeSelector": {HOSTNAME: None}}})  # a merge patch: null removes
    made.cluster.kubectl("patch", "sr", older, "--type=merge", "-p", grow)
    cond = await srs.wait_degraded(made.cluster, newer, "ConflictingNodeSelector", within=90)
    assert older in cond["message"] and second_node in cond["message"], cond["message"]
    await waiting.wait_for(
        lambda: _complete_on(made, older, second_node),
        timeout=180,
        interval=0.5,
        message=f"{older} completes on {second_node}",
    )
    await waiting.wait_for(
        lambda: not srs.sr_labels(_node(made, second_node), newer) and not _nodes_with_pods(made, newer),
        timeout=120,
        interval=0.5,
        message=f"everything of {newer} gone from {second_node}",
    )
    counts = {"selected": 2, "complete": 2}
    status = await srs.wait_ready(made.cluster, older, within=120, where=lambda s: s.get("nodes") == counts)
    assert status["nodes"] == counts

    # The overlap ends: the newer one gets its node back.
    shrink = json.dumps({"spec": {"nodeSelector": {HOSTNAME: first_node}}})
    made.cluster.kubectl("patch", "sr", older, "--type=merge", "-p", shrink)
    counts = {"selected": 1, "complete": 1}
    status = await srs.wait_ready(made.cluster, newer, within=180, where=lambda s: s.get("nodes") == counts)
    assert status["nodes"] == counts
    assert srs.condition(status, "Degraded")["status"] == "False"
    await waiting.wait_for(
        lambda: srs.sr_labels(_node(made, second_node), older) == {},
        timeout=120,
        interval=0.5,
        message=f"{older}'s labels gone from {second_node}",
    )
