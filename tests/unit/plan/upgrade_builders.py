"""The driver DaemonSet the upgrade tests roll out, and the keys and records of its nodes.

One ``OnDelete`` DaemonSet whose template moved on (``TEMPLATE``), the label and
annotation the upgrade keeps on a node, the revision a rollout is for, a node's record
of its phase, and the node changes a plan makes for the upgrade. Shared by
``test_upgrade``, ``test_upgrade_rollback`` and ``test_upgrade_jobs`` so that every phase
is walked on the same driver.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from builders import SR, ds, states, wanted

from sro.plan import actions, node_patches, upgrade_records

TEMPLATE = {"metadata": {"labels": {"app": "driver"}}, "spec": {"containers": [{"image": "d:2"}]}}
_DS = ds("driver", "state-driver")
DRIVER = replace(
    _DS, body={**_DS.body, "spec": {"updateStrategy": {"type": "OnDelete"}, "template": TEMPLATE}}
)
LABEL = upgrade_records.label(SR)
NOTE = upgrade_records.annotation(SR)
REVISION = upgrade_records.revision(wanted(states("state-driver"), [DRIVER], ["n00"]))


def _record(
    phase: str, *, cordoned: bool = True, since: str = "2026-11-22T06:00:00Z", **kw: Any
) -> dict[str, str]:
    kw.setdefault("revision", REVISION)
    rec = upgrade_records.Record(phase=phase, since=since, cordoned=cordoned, **kw)
    return {NOTE: rec.to_json()}


def _changes(p: actions.Plan) -> dict[str, node_patches.NodeChange]:
    """The upgrade's node changes (the walk's own labels left out)."""
    return {c.node: c for c in p.node_labels if LABEL in c.labels or c.unschedulable is not None}
