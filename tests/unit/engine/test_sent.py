"""The record of bodies sent and owned bodies one SpecialResource's passes keep (``engine.sent``).

Covers: an object planned again as the same instance gets the same owned body and digest
without building them again, while an equal new instance, or the same one for a
SpecialResource made again under its name, is built afresh to the same digest; the owned
body carries the owner label and reference and the digest ``diff`` computes of it;
``keep`` forgets what is no longer desired, in both records.
"""

from __future__ import annotations

from typing import Any

import pytest

from sro import errors
from sro.apply import diff
from sro.engine import sent as sent_
from sro.model import desired
from sro.model import specialresource as sr_model

pytestmark = pytest.mark.unit


def special_resource(uid: str = "uid-1") -> sr_model.SpecialResource:
    return sr_model.parse(
        {
            "apiVersion": "sro.dev/v1alpha1",
            "kind": "SpecialResource",
            "metadata": {"name": "gpu", "uid": uid, "generation": 1},
            "spec": {"recipe": "nvidia-gpu", "namespace": "gpu-ops"},
        }
    )


def pod(name: str, image: str = "validator:1") -> desired.DesiredObject:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "gpu-ops", "labels": {"app": "v"}},
        "spec": {"containers": [{"name": "c", "image": image}]},
    }
    return desired.DesiredObject(body=body, state="state-a", source=errors.Location(file="a.yaml"), node="n1")


def test_the_same_instance_gets_the_same_body_and_digest_without_building_them_again() -> None:
    sent, sr, obj = sent_.Sent(), special_resource(), pod("p1")
    body, digest = sent.owned(obj, sr)
    assert body["metadata"]["labels"] == {"app": "v", sr_model.OWNER_LABEL: "gpu"}
    assert body["metadata"]["ownerReferences"] == [sr.owner_reference()]
    assert digest == diff.desired_hash(sent_.owned_body(obj.body, sr))
    again, digest_again = sent.owned(obj, sr)
    assert again is body and digest_again == digest  # kept, not built again

    equal = pod("p1")
    fresh, fresh_digest = sent.owned(equal, sr)
    assert fresh is not body and fresh_digest == digest  # another instance: built again, alike
    assert sent.owned(equal, sr)[0] is fresh  # and kept in its turn

    changed = pod("p1", image="validator:2")
    assert sent.owned(changed, sr)[1] != digest


def test_a_special_resource_made_again_under_its_name_gets_bodies_owned_by_it() -> None:
    sent, obj = sent_.Sent(), pod("p1")
    first, _ = sent.owned(obj, special_resource("uid-1"))
    second, _ = sent.owned(obj, special_resource("uid-2"))
    assert first["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert second["metadata"]["ownerReferences"] == [special_resource("uid-2").owner_reference()]


def test_keep_forgets_what_is_no_longer_desired_in_both_records() -> None:
    sent, sr = sent_.Sent(), special_resource()
    kept, gone = pod("kept"), pod("gone")
    for obj in (kept, gone):
        sent.record(obj.ref, digest=sent.owned(obj, sr)[1], version=7)
    body, _ = sent.owned(gone, sr)
    sent.keep({kept.ref})
    assert sent.applied(kept.ref) == (sent.owned(kept, sr)[1], 7)
    assert sent.applied(gone.ref) is None
    assert sent.owned(gone, sr)[0] is not body  # built again: forgotten too
