"""What an owned watch keeps: sro's objects whole, anyone else's labelled objects as identity only."""

from __future__ import annotations

from typing import Any

import pytest

from sro.cache import projections
from sro.model import specialresource
from sro.plan import inputs

pytestmark = pytest.mark.unit

SR_UID = "0f1e2d3c"
SR_KIND = ("sro.dev/v1alpha1", "SpecialResource")


def _configmap(*, refs: list[dict[str, Any]], data_bytes: int = 0) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "cm",
            "namespace": "tenant",
            "uid": "u-1",
            "resourceVersion": "42",
            "labels": {specialresource.OWNER_LABEL: "gpu", "team": "x" * 60},
            "annotations": {"big": "y" * data_bytes},
            "ownerReferences": refs,
            "finalizers": [f"example.com/f{n}" for n in range(40)],
        },
        "data": {"payload": "z" * data_bytes},
    }


def _sr_ref(*, uid: str = SR_UID) -> dict[str, Any]:
    return {
        "apiVersion": "sro.dev/v1alpha1",
        "kind": "SpecialResource",
        "name": "gpu",
        "uid": uid,
        "controller": True,
    }


def test_an_object_a_specialresource_controls_is_kept_whole() -> None:
    project = projections.for_kind("v1", "ConfigMap", controlled_by=SR_KIND)
    view = project(_configmap(refs=[_sr_ref()], data_bytes=10))
    assert view.body["data"] == {"payload": "z" * 10}
    assert view.body["metadata"]["annotations"] == {"big": "y" * 10}
    assert inputs.is_ours(view.body, SR_UID)


def test_a_foreign_labelled_object_costs_its_identity_whatever_its_size() -> None:
    project = projections.for_kind("v1", "ConfigMap", controlled_by=SR_KIND)
    other = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "d-1", "controller": True}
    plain = {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "p-1"}
    view = project(_configmap(refs=[plain, other], data_bytes=512 * 1024))
    assert "data" not in view.body
    meta = view.body["metadata"]
    assert meta["labels"] == {specialresource.OWNER_LABEL: "gpu"}
    assert "annotations" not in meta
    assert meta["ownerReferences"] == [other]
    assert len(meta["finalizers"]) == 16
    assert (view.ref.kind, view.namespace, view.name, view.uid, view.owner) == (
        "ConfigMap",
        "tenant",
        "cm",
        "u-1",
        "gpu",
    )
    assert view.resource_version == "42"
    assert not inputs.is_ours(view.body, SR_UID)
    assert len(repr(view.body)) < 2048


def test_a_forged_reference_that_is_not_a_controller_keeps_nothing_more() -> None:
    project = projections.for_kind("v1", "ConfigMap", controlled_by=SR_KIND)
    view = project(_configmap(refs=[{**_sr_ref(), "controller": False}], data_bytes=100))
    assert "data" not in view.body
    assert view.body["metadata"]["ownerReferences"] == []


def test_other_watches_keep_bodies_whole() -> None:
    foreign = _configmap(refs=[], data_bytes=10)
    assert projections.for_kind("v1", "ConfigMap")(foreign).body["data"] == {"payload": "z" * 10}
    revision = {**foreign, "apiVersion": "apps/v1", "kind": "ControllerRevision", "data": {"spec": {}}}
    revisions = projections.for_kind("apps/v1", "ControllerRevision", controlled_by=SR_KIND)
    assert revisions(revision).body["data"] == {"spec": {}}
