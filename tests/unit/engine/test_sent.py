"""The record of bodies sent and of digests one SpecialResource's passes keep (``engine.sent``).

Covers: an object planned again as the same instance gets its digest without hashing its
body again, while an equal new instance, or the same one for a SpecialResource made again
under its name, is hashed afresh (to the same digest when the body is the same); the owned
body carries the owner label and reference, and the digest is the one ``diff`` computes of
it; ``keep`` forgets what is no longer desired, in both records.
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


def test_the_same_instance_gets_its_digest_without_hashing_again() -> None:
    sent, sr, obj = sent_.Sent(), special_resource(), pod("p1")
    body, digest = sent.owned(obj, sr)
    assert body["metadata"]["labels"] == {"app": "v", sr_model.OWNER_LABEL: "gpu"}
    assert body["metadata"]["ownerReferences"] == [sr.owner_reference()]
    assert digest == diff.desired_hash(sent_.owned_body(obj.body, sr))
    # The very string kept: a hash computed again would be a new one.
    assert sent.owned(obj, sr)[1] is digest
    assert sent.digest(obj, sr) is digest

    equal = pod("p1")
    fresh = sent.digest(equal, sr)
    assert fresh == digest and fresh is not digest  # another instance: hashed again, alike
    assert sent.digest(equal, sr) is fresh  # and kept in its turn

    assert sent.digest(pod("p1", image="validator:2"), sr) != digest


def test_a_special_resource_made_again_under_its_name_gets_bodies_owned_by_it() -> None:
    sent, obj = sent_.Sent(), pod("p1")
    first, first_digest = sent.owned(obj, special_resource("uid-1"))
    second, second_digest = sent.owned(obj, special_resource("uid-2"))
    assert first["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert second["metadata"]["ownerReferences"] == [special_resource("uid-2").owner_reference()]
    assert second_digest != first_digest


def test_keep_forgets_what_is_no_longer_desired_in_both_records() -> None:
    sent, sr = sent_.Sent(), special_resource()
    kept, gone = pod("kept"), pod("gone")
    for obj in (kept, gone):
        sent.record(obj.ref, digest=sent.digest(obj, sr), version=7)
    before = sent.digest(gone, sr)
    sent.keep({kept.ref})
    assert sent.applied(kept.ref) == (sent.digest(kept, sr), 7)
    assert sent.applied(gone.ref) is None
    assert sent.digest(gone, sr) is not before  # hashed again: forgotten too
