"""Hard and soft partitioning: taints on the selected nodes, PriorityClasses created and owned.

Covers contract section 1's ``spec.taints`` and ``spec.priorityClasses``: every selected
node gets the taints and the operator's own pods still run there (tolerations); a taint an
administrator put on a node first is left in place when the SpecialResource goes; the
PriorityClasses exist while the SpecialResource does and are removed with it.
"""

from __future__ import annotations

import pytest
import specialresources as srs
from conftest import Made, unique
from support import waiting

pytestmark = pytest.mark.e2e

RHEL = {"kernel": "5.14.0-427.13.1.el9_4.x86_64", "os": {"id": "rhel", "versionId": "9.4"}}


def _taint_keys(node: dict[str, object]) -> list[tuple[str, str]]:
    spec = node.get("spec") or {}
    assert isinstance(spec, dict)
    return [(t["key"], t.get("value", "")) for t in spec.get("taints") or ()]


async def test_taints_and_priority_classes_come_and_go_with_the_special_resource(made: Made) -> None:
    admin_taint = {"key": "e2e.sro.dev/admin", "value": "mine", "effect": "NoSchedule"}
    group, nodes = made.group("part", [{"count": 2, **RHEL}, {"count": 1, "taints": [admin_taint], **RHEL}])
    admins = next(n for n in nodes if n.startswith(f"{group}-1-"))
    pc_high, pc_low = unique("e2e-high"), unique("e2e-low")
    body = srs.manifest(
        unique("part"), recipe="simple-kmod", node_selector={srs.GROUP_LABEL: group},
        extra_spec={
            "taints": [{"key": "e2e.sro.dev/kmod", "value": "present", "effect": "NoSchedule"}, admin_taint],
            "priorityClasses": [{"name": pc_high, "value": 100000, "description": "high"},
                                {"name": pc_low, "value": 10}],
        },
    )
    name = made.sr(body)
    await srs.wait_ready(made.cluster, name, within=180)

    for node in srs.nodes(made.cluster, {srs.GROUP_LABEL: group}):
        keys = _taint_keys(node)
        assert ("e2e.sro.dev/kmod", "present") in keys
        assert keys.count(("e2e.sro.dev/admin", "mine")) == 1  # on every node, once
    classes = {p["metadata"]["name"]: p for p in srs.owned(made.cluster, "priorityclasses", name)}
    assert set(classes) == {pc_high, pc_low}
    assert classes[pc_high]["value"] == 100000 and classes[pc_low]["value"] == 10

    srs.delete(made.cluster, name)
    await waiting.wait_for(lambda: srs.get(made.cluster, name) is None, timeout=120, interval=0.5,
                           message="the SpecialResource let go")
    for node in srs.nodes(made.cluster, {srs.GROUP_LABEL: group}):
        keys = _taint_keys(node)
        assert ("e2e.sro.dev/kmod", "present") not in keys
        wanted_admin = [("e2e.sro.dev/admin", "mine")] if node["metadata"]["name"] == admins else []
        assert [k for k in keys if k[0] == "e2e.sro.dev/admin"] == wanted_admin, node["metadata"]["name"]
    assert srs.owned(made.cluster, "priorityclasses", name) == []
