"""The SpecialResource CRD on the real API server: established, documented, defaulted, validated.

Covers what the API server itself enforces from ``manifests/crd``: that the CRD is
accepted (structural schema, CEL cost within budget) and becomes Established, that
``kubectl explain`` shows field descriptions, that defaults are filled in, and that each
CEL rule refuses a bad object with its own message. Objects are created with a
server-side dry run, so nothing is left behind and no running operator reacts.
What the operator does with a valid object is covered by the end-to-end tests.
"""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import waiting

pytestmark = pytest.mark.integration

CRD_FILE = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "sro.dev_specialresources.yaml"
CRD_NAME = "specialresources.sro.dev"
EXAMPLE = yaml.safe_load((Path(__file__).resolve().parents[1] / "golden" / "nvidia-gpu.sr.yaml").read_text())


def _name() -> str:
    return f"crd-test-{uuid.uuid4().hex[:8]}"


def _sr(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sro.dev/v1alpha1",
        "kind": "SpecialResource",
        "metadata": {"name": name},
        "spec": spec,
    }


def _dry_run(cluster: Any, body: dict[str, Any]) -> Any:
    return cluster.kubectl(
        "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(body), check=False
    )


@pytest.fixture(scope="module")
async def crd(cluster: Any) -> dict[str, Any]:
    """The CRD applied and Established."""
    cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=crd-test", "-f", str(CRD_FILE)
    )

    def established() -> dict[str, Any] | None:
        got = cluster.kubectl_json("get", "crd", CRD_NAME)
        conditions = {c["type"]: c["status"] for c in got.get("status", {}).get("conditions", [])}
        return got if conditions.get("Established") == "True" else None

    result: dict[str, Any] = await waiting.wait_for(
        established, timeout=60, message=f"CRD {CRD_NAME} to become Established"
    )
    return result


async def test_the_crd_is_established_with_the_contract_names(crd: dict[str, Any]) -> None:
    names = crd["spec"]["names"]
    assert crd["spec"]["scope"] == "Cluster"
    assert (names["kind"], names["plural"], names["shortNames"]) == (
        "SpecialResource",
        "specialresources",
        ["sr"],
    )
    version = crd["spec"]["versions"][0]
    assert version["name"] == "v1alpha1"
    assert "status" in version["subresources"]
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns == ["State", "Ready", "Recipe", "Age"]


async def test_kubectl_explain_shows_the_description_of_spec_and_of_a_nested_field(
    cluster: Any, crd: dict[str, Any]
) -> None:
    def explained(path: str, expected: str) -> str | None:
        out = cluster.kubectl("explain", path, check=False)
        return out.stdout if out.returncode == 0 and expected in out.stdout else None

    spec = await waiting.wait_for(
        lambda: explained("sr.spec", "What the administrator wants"),
        timeout=60,
        message="kubectl explain sr.spec to show its description",
    )
    assert "managementState" in spec and "nodeSelector" in spec
    effect = await waiting.wait_for(
        lambda: explained("sr.spec.taints.effect", "PreferNoSchedule"),
        timeout=60,
        message="kubectl explain sr.spec.taints.effect",
    )
    assert "NoSchedule" in effect


async def test_every_field_of_the_schema_has_a_description(crd: dict[str, Any]) -> None:
    missing: list[str] = []

    def walk(schema: dict[str, Any], path: str) -> None:
        if path not in ("", ".metadata") and not schema.get("description"):
            missing.append(path or "<root>")
        for key, child in (schema.get("properties") or {}).items():
            walk(child, f"{path}.{key}")
        if isinstance(schema.get("items"), dict):
            walk(schema["items"], f"{path}[]")

    walk(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"], "")
    assert missing == []


async def test_the_server_fills_in_the_defaults(cluster: Any, crd: dict[str, Any]) -> None:
    body = _sr(_name(), taints=[{"key": "nvidia.com/gpu", "value": "present"}])
    out = _dry_run(cluster, body)
    assert out.returncode == 0, out.stderr
    created = json.loads(out.stdout)
    assert created["spec"]["managementState"] == "Managed"
    assert created["spec"]["taints"][0]["effect"] == "NoSchedule"
    policy = created["spec"]["upgradePolicy"]
    assert (policy["maxUnavailable"], policy["maxParallel"], policy["maxFailedNodes"]) == ("25%", 1, 1)
    assert policy["autoRollback"] is True
    assert policy["drain"] == {
        "enable": True,
        "timeoutSeconds": 300,
        "deleteEmptyDirData": False,
        "force": False,
    }


async def test_a_valid_specialresource_with_every_field_is_accepted(
    cluster: Any, crd: dict[str, Any]
) -> None:
    body = copy.deepcopy(EXAMPLE)
    body["metadata"]["name"] = _name()
    body["spec"].update(
        {
            "recipe": "nvidia-gpu",
            "namespace": "nvidia-gpu-operands",
            "nodeSelector": {"feature.node.kubernetes.io/pci-10de.present": "true", "empty": ""},
            "set": {"deep": {"nested": [1, {"x": None}]}},
            "managementState": "Unmanaged",
            "priorityClasses": [
                {"name": "gpu-high-priority", "value": 1000000, "description": "GPU work first"}
            ],
        }
    )
    out = _dry_run(cluster, body)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["spec"]["set"]["deep"]["nested"][0] == 1


BAD = [
    pytest.param({"name": "a" * 41}, "metadata.name must be a DNS label of at most 40", id="name-too-long"),
    pytest.param({"name": "gpu.example"}, "metadata.name must be a DNS label", id="name-not-a-label"),
    pytest.param(
        {"managementState": "Deleted"},
        "managementState must be one of Managed, Unmanaged, Removed",
        id="management-state",
    ),
    pytest.param({"self_dependency": True}, "cannot be among its own dependencies", id="own-dependency"),
    pytest.param(
        {"taints": [{"key": "k", "effect": "NoRun"}]}, "taint effect must be one of", id="taint-effect"
    ),
    pytest.param(
        {"taints": [{"key": "node.kubernetes.io/not-ready"}]},
        "node.kubernetes.io/ taints are set and removed by the node controller",
        id="system-taint",
    ),
    pytest.param(
        {"namespace": "kube-system"}, "namespace must be a DNS label and not one of", id="reserved-ns"
    ),
    pytest.param(
        {"namespace": "Not_A_Label"}, "namespace must be a DNS label and not one of", id="ns-not-label"
    ),
    pytest.param({"name": "default"}, "which is a reserved namespace here", id="name-defaults-reserved-ns"),
    pytest.param(
        {"nodeSelector": {"bad key!": "true"}},
        "nodeSelector keys must be valid label keys",
        id="selector-key",
    ),
    pytest.param(
        {"nodeSelector": {"example.com/ok": "not valid!"}},
        "nodeSelector values must be valid label values",
        id="selector-value",
    ),
    pytest.param({"recipe": "../etc"}, "recipe must be a recipe name", id="recipe-path"),
    pytest.param(
        {"nodeSelector": {}, "taints": [{"key": "gpu", "effect": "NoExecute"}]},
        "a NoExecute taint with an empty nodeSelector would taint every node",
        id="no-execute-everywhere",
    ),
    pytest.param(
        {"upgradePolicy": {"maxUnavailable": "0%"}},
        "maxUnavailable must be a node count of at least 1 or a percentage",
        id="max-unavailable-zero-percent",
    ),
    pytest.param(
        {"upgradePolicy": {"maxUnavailable": 0}},
        "maxUnavailable must be a node count of at least 1 or a percentage",
        id="max-unavailable-zero",
    ),
    pytest.param({"upgradePolicy": {"maxParallel": 0}}, "maxParallel", id="max-parallel-zero"),
]


@pytest.mark.parametrize(("change", "message"), BAD)
async def test_each_cel_rule_refuses_a_bad_object_with_its_message(
    cluster: Any, crd: dict[str, Any], change: dict[str, Any], message: str
) -> None:
    change = dict(change)
    name = str(change.pop("name", _name()))
    body = _sr(name)
    if change.pop("self_dependency", False):
        body["spec"]["dependencies"] = [{"name": "other"}, {"name": name}]
    body["spec"].update(change)
    out = _dry_run(cluster, body)
    assert out.returncode != 0, f"accepted: {out.stdout[:500]}"
    assert message in out.stderr, out.stderr


async def test_null_values_in_set_survive_so_they_can_remove_recipe_defaults(
    cluster: Any, crd: dict[str, Any]
) -> None:
    body = _sr(_name(), set={"grafana": None, "driver": {"version": None, "repository": "example.com"}})
    out = _dry_run(cluster, body)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["spec"]["set"] == body["spec"]["set"]


async def test_a_specialresource_without_spec_gets_an_empty_defaulted_one(
    cluster: Any, crd: dict[str, Any]
) -> None:
    body = _sr(_name())
    del body["spec"]
    out = _dry_run(cluster, body)
    assert out.returncode == 0, out.stderr
    spec = json.loads(out.stdout)["spec"]
    assert spec["managementState"] == "Managed"
    assert spec["nodeLossGracePeriodSeconds"] == 300
    assert set(spec) == {"managementState", "nodeLossGracePeriodSeconds", "upgradePolicy"}  # others optional
