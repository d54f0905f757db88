"""Ownership by reference: what sro counts, deletes or writes as its own.

Covers ``inputs.is_ours`` (only the controller owner reference to the SpecialResource's
uid proves it; the ``sro.dev/owner`` label does not), ``inputs.partition``, and that the
``Observed`` a pass plans from holds none of the labelled objects that are not sro's, so
the planner can never delete them; the DaemonSet controller's ControllerRevisions (which
carry the owner label of sro's pod templates) are read as template history, neither sro's
objects nor strangers'.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from sro.cache import projections
from sro.model import desired
from sro.model import specialresource as sr_model
from sro.plan import inputs, planner, pods_seen

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 24, tzinfo=UTC)
UID = "11111111-2222-3333-4444-555555555555"
SR = sr_model.parse(
    {
        "apiVersion": sr_model.API_VERSION,
        "kind": sr_model.KIND,
        "metadata": {"name": "gpu", "uid": UID, "generation": 1},
        "spec": {"recipe": "gpu"},
    }
)


def labelled(
    kind: str, name: str, *, refs: list[dict[str, Any]], namespace: str = "gpu"
) -> projections.ObjectView:
    body = {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": {sr_model.OWNER_LABEL: "gpu"},
            "ownerReferences": refs,
        },
    }
    return projections.ObjectView.from_body(body)


def test_only_the_controller_reference_to_the_srs_uid_makes_an_object_sros() -> None:
    mine = {"metadata": {"ownerReferences": [SR.owner_reference()]}}
    assert inputs.is_ours(mine, UID)
    assert not inputs.is_ours({"metadata": {"labels": {sr_model.OWNER_LABEL: "gpu"}}}, UID)
    not_controller = {"metadata": {"ownerReferences": [{**SR.owner_reference(), "controller": False}]}}
    assert not inputs.is_ours(not_controller, UID)
    other_uid = {"metadata": {"ownerReferences": [{**SR.owner_reference(), "uid": "someone-else"}]}}
    assert not inputs.is_ours(other_uid, UID)
    assert not inputs.is_ours({"metadata": {"ownerReferences": "junk"}}, UID)
    assert not inputs.is_ours(mine, "")


def test_labelled_objects_without_the_reference_are_never_planned_for_deletion() -> None:
    mine = labelled("ConfigMap", "ours", refs=[SR.owner_reference()])
    tenant = labelled("ConfigMap", "tenants", refs=[], namespace="tenant")
    assert inputs.partition([mine, tenant], UID) == ((mine,), (tenant,))
    nothing = desired.DesiredState(
        sr_name="gpu", namespace="gpu", recipe="gpu", states=(), objects=(), nodes=(), kernel_groups={}
    )
    seen = inputs.observe(
        SR,
        wanted=nothing,
        nodes=(),
        owned=[mine, tenant],
        pods=pods_seen.read((), sr=SR, owners=frozenset()),
        previous={},
        recipe_source="built-in",
    )
    assert set(seen.objects) == {mine.ref}
    p = planner.plan(nothing, seen, now=NOW)  # every owned object not desired is deleted...
    assert [d.ref for d in p.delete] == [mine.ref]  # ...but only sro's own


def test_teardown_counts_and_deletes_only_what_carries_the_reference() -> None:
    mine = labelled("ConfigMap", "ours", refs=[SR.owner_reference()])
    tenant = labelled(
        "ConfigMap", "tenants", refs=[{"kind": "Deployment", "name": "x", "uid": "u", "controller": True}]
    )
    seen = inputs.observe_teardown(SR, owned=[mine, tenant], namespace_pods=(), nodes=(), previous={})
    down = planner.plan_teardown(
        sr_name="gpu", seen=seen, generation=1, now=datetime(2026, 11, 24, tzinfo=UTC)
    )
    assert [d.ref for d in down.delete] == [mine.ref]


def test_controller_revisions_of_sros_daemonsets_are_history_never_owned_objects() -> None:
    ds = projections.ObjectView.from_body(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {
                "name": "driver",
                "namespace": "gpu",
                "uid": "uid-driver",
                "labels": {sr_model.OWNER_LABEL: "gpu"},
                "ownerReferences": [SR.owner_reference()],
            },
        }
    )
    template = {"metadata": {"labels": {sr_model.OWNER_LABEL: "gpu"}}, "spec": {"containers": []}}

    def history(name: str, owner_uid: str, number: int) -> projections.ObjectView:
        return projections.ObjectView.from_body(
            {
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": {
                    "name": name,
                    "namespace": "gpu",
                    "uid": f"uid-{name}",
                    "labels": {sr_model.OWNER_LABEL: "gpu", "controller-revision-hash": name[-3:]},
                    "ownerReferences": [
                        {"kind": "DaemonSet", "name": "driver", "uid": owner_uid, "controller": True}
                    ],
                },
                "data": {"spec": {"template": {**template, "$patch": "replace"}}},
                "revision": number,
            }
        )

    kept, current, stranger = (
        history("driver-abc", "uid-driver", 1),
        history("driver-def", "uid-driver", 2),
        (history("other-xyz", "uid-someone-else", 7)),
    )
    owned = [ds, kept, current, stranger]
    assert inputs.partition(owned, UID) == ((ds,), ())  # neither sro's nor a stranger's to warn of
    nothing = desired.DesiredState(
        sr_name="gpu", namespace="gpu", recipe="gpu", states=(), objects=(), nodes=(), kernel_groups={}
    )
    seen = inputs.observe(
        SR,
        wanted=nothing,
        nodes=(),
        owned=owned,
        pods=pods_seen.read((), sr=SR, owners=frozenset()),
        previous={},
        recipe_source="built-in",
    )
    assert set(seen.objects) == {ds.ref}  # the DaemonSet controller's, never deleted by sro
    assert [(r.hash, r.number) for r in seen.revisions] == [("abc", 1), ("def", 2)]
    found = seen.revision_of("uid-driver", "abc")
    assert found is not None and dict(found.template) == template  # the patch marker dropped
    assert seen.current_revision("uid-driver") == seen.revision_of("uid-driver", "def")
