"""Parsing and validating SpecialResource bodies (sro.model.specialresource).

Covers defaults, every contract rule (name, namespace, labels, taints, dependencies,
managementState), error messages naming the SpecialResource, and bodies too deep to
process. The API server's own CEL checks are covered by tests/integration/test_crd.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sro.errors import Location, RecipeInvalid
from sro.model import specialresource as srmodel
from sro.watch import decode

pytestmark = pytest.mark.unit


def body(name: str = "nvidia-gpu", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sro.dev/v1alpha1",
        "kind": "SpecialResource",
        "metadata": {"name": name, "uid": "u-1", "generation": 3},
        "spec": spec,
    }


def test_recipe_and_namespace_default_to_the_name() -> None:
    sr = srmodel.parse(body())
    assert (sr.name, sr.spec.recipe, sr.spec.namespace) == ("nvidia-gpu", "nvidia-gpu", "nvidia-gpu")
    assert sr.spec.node_selector is None
    assert sr.spec.management_state is srmodel.ManagementState.MANAGED
    assert (sr.uid, sr.generation, sr.deleting) == ("u-1", 3, False)


def test_every_spec_field_is_read() -> None:
    sr = srmodel.parse(
        body(
            recipe="gpu",
            namespace="gpu-operands",
            nodeSelector={"feature.node.kubernetes.io/pci-10de.present": "true"},
            set={"driverVersion": "550"},
            dependencies=[{"name": "mellanox-ofed"}],
            managementState="Removed",
            taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoExecute"}],
            priorityClasses=[{"name": "gpu-high", "value": 1000, "description": "first"}],
            nodeLossGracePeriodSeconds=20,
        )
    )
    assert sr.spec.recipe == "gpu" and sr.spec.namespace == "gpu-operands"
    assert dict(sr.spec.node_selector or {}) == {"feature.node.kubernetes.io/pci-10de.present": "true"}
    assert sr.spec.set["driverVersion"] == "550"
    assert sr.spec.dependencies == ("mellanox-ofed",)
    assert sr.spec.management_state is srmodel.ManagementState.REMOVED
    assert sr.spec.taints == (srmodel.TaintSpec(key="nvidia.com/gpu", value="present", effect="NoExecute"),)
    assert sr.spec.priority_classes[0].value == 1000
    assert sr.spec.node_loss_grace_seconds == 20
    assert srmodel.parse(body()).spec.node_loss_grace_seconds == 300


def test_a_taint_without_value_is_tolerated_by_existence() -> None:
    sr = srmodel.parse(body(taints=[{"key": "gpu"}]))
    assert sr.spec.taints[0].toleration() == {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}


def test_an_empty_node_selector_is_kept_as_given_not_replaced_by_the_default() -> None:
    assert srmodel.parse(body(nodeSelector={})).spec.node_selector == {}


@pytest.mark.parametrize(
    ("name", "spec", "message"),
    [
        ("a" * 41, {}, "DNS label of at most 40"),
        ("Bad_Name", {}, "metadata.name 'Bad_Name'"),
        ("gpu", {"namespace": "kube-system"}, "spec.namespace 'kube-system' is reserved"),
        ("default", {}, "spec.namespace 'default' is reserved"),
        ("gpu", {"namespace": "Not.A.Label"}, "spec.namespace 'Not.A.Label' must be a DNS label"),
        ("gpu", {"recipe": "../x"}, "never a path"),
        ("gpu", {"nodeSelector": {"bad key": "x"}}, "spec.nodeSelector key 'bad key'"),
        ("gpu", {"nodeSelector": {"ok": "bad value!"}}, "value 'bad value!'"),
        ("gpu", {"dependencies": [{"name": "gpu"}]}, "cannot depend on itself"),
        ("gpu", {"dependencies": "ofed"}, "spec.dependencies must be a list"),
        ("gpu", {"managementState": "Deleted"}, "must be one of Managed, Unmanaged, Removed"),
        ("gpu", {"taints": [{"key": "k", "effect": "NoRun"}]}, "effect 'NoRun' must be one of"),
        ("gpu", {"taints": [{"key": "bad key"}]}, "spec.taints[0].key"),
        ("gpu", {"taints": [{"key": "node.kubernetes.io/unreachable"}]}, "node controller and the kubelet"),
        ("gpu", {"priorityClasses": [{"name": "p", "value": 2_000_000_000}]}, "at most 1000000000"),
        ("gpu", {"set": ["not", "a", "map"]}, "spec.set must be a mapping"),
        ("gpu", {"nodeLossGracePeriodSeconds": -1}, "nodeLossGracePeriodSeconds -1 must be an integer"),
        ("gpu", {"nodeLossGracePeriodSeconds": 86_401}, "must be an integer from 0 to 86400"),
        ("gpu", {"nodeLossGracePeriodSeconds": "300"}, "nodeLossGracePeriodSeconds '300'"),
        ("gpu", {"nodeSelectr": {}}, "unknown spec fields ['nodeSelectr']"),
    ],
)
def test_each_rule_refuses_a_bad_body_naming_the_specialresource(
    name: str, spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(srmodel.SpecialResourceInvalid) as caught:
        srmodel.parse(body(name, **spec))
    assert message in str(caught.value)
    assert f"SpecialResource {name}" in str(caught.value)


def test_several_problems_are_reported_together() -> None:
    with pytest.raises(RecipeInvalid) as caught:
        srmodel.parse(body(namespace="default", managementState="Nope"))
    assert "reserved" in str(caught.value) and "Nope" in str(caught.value)


def test_the_error_carries_the_location_it_was_read_from() -> None:
    with pytest.raises(RecipeInvalid) as caught:
        srmodel.parse(body(managementState="x"), location=Location(file="sr.yaml", line=7))
    assert str(caught.value).startswith("sr.yaml:7: SpecialResource nvidia-gpu:")


def test_a_set_nested_too_deeply_is_refused_without_crashing() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(srmodel.SpecialResourceInvalid, match="nested deeper than"):
        srmodel.parse(body(set=deep))


def test_a_set_the_decoder_cut_is_refused_as_too_deep_not_rendered_with_the_marker() -> None:
    cut = decode.cut({"spec": {"set": json.loads('{"a":' * 100 + "1" + "}" * 100)}})
    assert srmodel.CUT == decode.TOO_DEEP
    with pytest.raises(srmodel.SpecialResourceInvalid, match="nested deeper than 64 levels"):
        srmodel.parse(body(set=cut["spec"]["set"]))


def test_a_body_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(srmodel.SpecialResourceInvalid, match="must be a mapping"):
        srmodel.parse(["not", "an", "object"])  # type: ignore[arg-type]


def test_state_and_complete_labels_are_prefixed_by_the_specialresource() -> None:
    sr = srmodel.parse(body())
    assert sr.state_label("state-driver") == "nvidia-gpu.sro.dev/state-driver"
    assert srmodel.complete_label("ofed") == "ofed.sro.dev/complete"
    assert sr.owner_reference()["uid"] == "u-1"
