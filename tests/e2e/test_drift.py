"""Drift: objects the operator owns are put back when someone deletes or edits them.

Covers acceptance test 6: a deleted driver DaemonSet comes back, and a DaemonSet whose
image someone changed gets the recipe's image again; the SpecialResource ends Ready.
"""

from __future__ import annotations

import json

import pytest
import specialresources as srs
from conftest import Made, unique
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

