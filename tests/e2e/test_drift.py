"""Drift: objects the operator owns are put back when someone deletes or edits them.

Covers acceptance test 6: a deleted driver DaemonSet comes back, and a DaemonSet whose
image someone changed gets the recipe's image again; the SpecialResource ends Ready.

A validation pod deleted after it succeeded is the exception: the pod garbage collector
does that to the oldest finished pods of a large cluster, and the node's ready label is
the record of its success, so nothing on the node changes and it is not made again.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import specialresources as srs
from conftest import Made, unique
from operator_process import Operator
from simcluster import audit
from support import waiting

pytestmark = pytest.mark.e2e


async def test_a_deleted_daemonset_and_an_edited_image_are_both_restored(made: Made) -> None:
    group, _ = made.group(
        "drift",
        [
            {"count": 2, "kernel": "5.14.0-427.13.1.el9_4.x86_64", "os": {"id": "rhel", "versionId": "9.4"}},
            {"count": 2, "kernel": "5.15.0-105-generic", "os": {"id": "ubuntu", "versionId": "22.04"}},
        ],
    )
    selector = {srs.GROUP_LABEL: group}
    name = made.sr(srs.manifest(unique("drift"), recipe="simple-kmod", node_selector=selector))
    await srs.wait_ready(made.cluster, name, within=180)
    first, second = sorted(
        srs.owned(made.cluster, "daemonsets", name, namespace=name), key=lambda d: d["metadata"]["name"]
    )
    deleted_uid = first["metadata"]["uid"]
    wanted_image = second["spec"]["template"]["spec"]["containers"][0]["image"]

    made.cluster.kubectl("delete", "daemonset", first["metadata"]["name"], "-n", name, "--wait=false")
    image_path = "/spec/template/spec/containers/0/image"
    patch = [{"op": "replace", "path": image_path, "value": "example.com/evil:1"}]
    made.cluster.kubectl(
        "patch", "daemonset", second["metadata"]["name"], "-n", name, "--type=json", "-p", json.dumps(patch)
    )

    def restored() -> bool:
        found = srs.owned(made.cluster, "daemonsets", name, namespace=name)
        by_name = {d["metadata"]["name"]: d for d in found}
        back = by_name.get(first["metadata"]["name"])
        edited = by_name.get(second["metadata"]["name"])
        return bool(
            back is not None
            and back["metadata"]["uid"] != deleted_uid
            and not back["metadata"].get("deletionTimestamp")
            and edited is not None
            and edited["spec"]["template"]["spec"]["containers"][0]["image"] == wanted_image
        )

    await waiting.wait_for(restored, timeout=60, interval=0.5, message="both DaemonSets restored")
    await srs.wait_ready(made.cluster, name, within=180)


async def test_a_validation_pod_deleted_after_it_succeeded_changes_nothing_on_its_node(
    made: Made, operator: Operator
) -> None:
    group, _ = made.group(
        "collected",
        [{"count": 2, "kernel": "5.14.0-427.13.1.el9_4.x86_64", "os": {"id": "rhel", "versionId": "9.4"}}],
    )
    name = made.sr(
        srs.manifest(unique("collected"), recipe="simple-kmod", node_selector={srs.GROUP_LABEL: group})
    )
    await srs.wait_ready(made.cluster, name, within=180)
    await waiting.wait_for(operator.idle, timeout=60, interval=0.5, message="the operator is idle")
    nodes = srs.nodes(made.cluster, {srs.GROUP_LABEL: group})
    labels = {n["metadata"]["name"]: srs.sr_labels(n, name) for n in nodes}
    node = sorted(labels)[0]
    (validation,) = [
        p
        for p in srs.pods(made.cluster, name)
        if p["spec"].get("nodeName") == node
        and (p["metadata"].get("labels") or {}).get("sro.dev/node") == node
    ]
    assert validation["status"]["phase"] == "Succeeded"
    pod = validation["metadata"]["name"]
    since = datetime.now(UTC)

    async def a_pass_has_decided(before: float) -> None:
        # Any change of the pod wakes a pass; once one has run and the queue is empty,
        # sro has decided on what it saw.
        await waiting.wait_for(
            lambda: operator.reconciles() > before and operator.idle(),
            timeout=60,
            interval=0.5,
            message="a pass after the pod changed",
        )

    def nothing_changed() -> None:
        after = {
            n["metadata"]["name"]: srs.sr_labels(n, name)
            for n in srs.nodes(made.cluster, {srs.GROUP_LABEL: group})
        }
        assert after == labels
        assert srs.ready_condition(srs.status(made.cluster, name))

    # A graceful delete is seen first as a deletion timestamp: held here by a finalizer,
    # so a pass surely sees the pod going before it is gone.
    hold = json.dumps({"metadata": {"finalizers": ["example.com/hold"]}})
    made.cluster.kubectl("patch", "pod", pod, "-n", name, "--type=merge", "-p", hold)
    reconciles = operator.reconciles()
    made.cluster.kubectl("delete", "pod", pod, "-n", name, "--wait=false")
    going = made.cluster.kubectl_json("get", "pod", pod, "-n", name)
    assert going["metadata"].get("deletionTimestamp")
    await a_pass_has_decided(reconciles)
    nothing_changed()

    reconciles = operator.reconciles()
    release = json.dumps({"metadata": {"finalizers": None}})
    made.cluster.kubectl("patch", "pod", pod, "-n", name, "--type=merge", "-p", release)
    await waiting.wait_for(
        lambda: "NotFound" in made.cluster.kubectl("get", "pod", pod, "-n", name, check=False).stderr,
        timeout=60,
        interval=0.5,
        message="the pod gone",
    )
    await a_pass_has_decided(reconciles)
    nothing_changed()

    writes = audit.since(audit.read(made.cluster.audit_log), since)
    by_sro = [
        w
        for w in audit.by_agent(writes, audit.SRO_AGENT_PREFIX)
        if w.namespace == name or w.resource == "nodes"
    ]
    assert [w for w in by_sro if w.resource in ("pods", "nodes")] == [], by_sro
    pods_deleted = [
        w.name for w in writes if w.verb == "delete" and w.resource == "pods" and w.namespace == name
    ]
    # Only the one deleted here (kubectl's delete, then the kubelet's, as devsim plays it).
    assert set(pods_deleted) == {pod}, pods_deleted
