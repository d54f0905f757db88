"""base.edit_at copies the mappings along the paths it is given and shares the rest."""

from __future__ import annotations

import copy

import pytest

from sro.errors import Location
from sro.hooks import base
from sro.model import desired

pytestmark = pytest.mark.unit


def _pod() -> desired.DesiredObject:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "validate", "labels": {"app": "v"}},
        "spec": {"containers": [{"name": "c", "image": "i"}], "affinity": {"x": {"y": 1}}},
    }
    return desired.DesiredObject(body=body, state="s", source=Location(file="s/pod.yaml", line=1))


def test_the_paths_are_copied_and_the_rest_shared() -> None:
    obj = _pod()
    before = copy.deepcopy(dict(obj.body))
    new, body = base.edit_at(obj, ("metadata", "labels"), ("spec",), node="n1")
    base.metadata(body)["name"] = "validate-n1"
    body["metadata"]["labels"]["node"] = "n1"
    body["spec"]["nodeName"] = "n1"
    assert obj.body == before, "the original body is untouched"
    assert new.node == "n1" and new.body is body
    assert body["spec"]["containers"] is obj.body["spec"]["containers"], "what is not written is shared"
    assert body["metadata"]["labels"] == {"app": "v", "node": "n1"}


def test_a_missing_level_is_created_inside_a_copy() -> None:
    obj = _pod()
    _new, body = base.edit_at(obj, ("spec", "nodeSelector"))
    base.sub(body["spec"], "nodeSelector")["k"] = "v"
    assert "nodeSelector" not in obj.body["spec"]
    assert body["spec"]["nodeSelector"] == {"k": "v"}


def test_shared_prefixes_are_copied_once() -> None:
    obj = _pod()
    _new, body = base.edit_at(obj, ("spec", "affinity"), ("spec",))
    body["spec"]["affinity"]["z"] = 2
    body["spec"]["hostNetwork"] = True
    assert body["spec"]["affinity"] == {"x": {"y": 1}, "z": 2}
    assert body["spec"]["hostNetwork"] is True
    assert obj.body["spec"]["affinity"] == {"x": {"y": 1}}
    assert "hostNetwork" not in obj.body["spec"]
