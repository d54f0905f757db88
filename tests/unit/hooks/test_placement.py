"""Placement and ownership injected into rendered objects (sro.hooks.placement, sro.hooks.ownership).

Covers the effective nodeSelector, tolerations for the SpecialResource's taints, the
node-affinity terms on earlier states and dependencies, owner and state labels,
namespaces for namespaced kinds, and the owner reference added later by the engine.
"""

from __future__ import annotations

import json

import pytest
from conftest import configmap, daemonset, make_node, make_recipe, make_sr, pod, render

from sro.errors import RecipeInvalid
from sro.hooks import ownership

pytestmark = pytest.mark.unit

PER_NODE = '    sro.dev/per-node: "true"\n'


def spec_of(obj: object) -> dict:  # type: ignore[type-arg]
    body = obj.body  # type: ignore[attr-defined]
    return body["spec"] if body["kind"] == "Pod" else body["spec"]["template"]["spec"]


def test_daemonsets_and_per_node_pods_get_selector_tolerations_and_affinity() -> None:
    recipe = make_recipe(
        {
            "driver": {"ds.yaml": daemonset()},
            "validate": {"pod.yaml": pod(annotations=PER_NODE)},
        }
    )
    sr = make_sr(taints=[{"key": "nvidia.com/gpu", "value": "present"}], dependencies=[{"name": "ofed"}])
    result = render(sr, recipe, [make_node("a")])
    ds, validation = result.objects
    own = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    for obj in (ds, validation):
        assert spec_of(obj)["nodeSelector"]["feature.node.kubernetes.io/pci-10de.present"] == "true"
    # The DaemonSet controller gives its pods the node-condition tolerations itself.
    assert spec_of(ds)["tolerations"] == [own]
    assert spec_of(validation)["tolerations"] == [
        own,
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    ]
    terms = spec_of(validation)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {"key": "gpu.sro.dev/driver", "operator": "In", "values": ["ready"]},
                {"key": "ofed.sro.dev/complete", "operator": "In", "values": ["true"]},
            ]
        }
    ]
    ds_terms = spec_of(ds)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert ds_terms["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {"key": "ofed.sro.dev/complete", "operator": "In", "values": ["true"]},
            ]
        }
    ]


def test_the_first_state_without_dependencies_gets_no_affinity() -> None:
    (ds,) = render(make_sr(), make_recipe({"driver": {"ds.yaml": daemonset()}}), [make_node("a")]).objects
    assert "affinity" not in spec_of(ds) and "tolerations" not in spec_of(ds)


def test_the_specialresource_selector_replaces_the_recipe_default_and_wins_over_the_template() -> None:
    extra = "      nodeSelector:\n        role: gpu\n        zone: template\n"
    recipe = make_recipe({"driver": {"ds.yaml": daemonset(extra=extra)}})
    sr = make_sr(nodeSelector={"zone": "a"})
    result = render(sr, recipe, [make_node("in", zone="a"), make_node("out", zone="b")])
    assert result.nodes == ("in",)
    assert spec_of(result.objects[0])["nodeSelector"] == {"role": "gpu", "zone": "a"}


def test_existing_affinity_terms_each_get_the_state_requirements() -> None:
    extra = """      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{key: a, operator: Exists}]
              - matchExpressions: [{key: b, operator: Exists}]
"""
    recipe = make_recipe({"one": {"cm.yaml": configmap()}, "two": {"ds.yaml": daemonset(extra=extra)}})
    ds = render(make_sr(), recipe, [make_node("a")]).objects_of("two")[0]
    terms = spec_of(ds)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    required = {"key": "gpu.sro.dev/one", "operator": "In", "values": ["ready"]}
    assert [t["matchExpressions"][-1] for t in terms["nodeSelectorTerms"]] == [required, required]


def test_deployments_and_config_are_not_placed() -> None:
    deployment = daemonset("web").replace("kind: DaemonSet", "kind: Deployment")
    recipe = make_recipe({"one": {"cm.yaml": configmap()}, "two": {"d.yaml": deployment}})
    dep = render(make_sr(taints=[{"key": "t"}]), recipe, [make_node("a")]).objects_of("two")[0]
    assert "affinity" not in spec_of(dep) and "tolerations" not in spec_of(dep)


def test_every_object_is_labelled_with_its_owner_and_state_and_namespaced_ones_get_the_namespace() -> None:
    role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\nrules: []\n"
    recipe = make_recipe({"one": {"cm.yaml": configmap(), "role.yaml": role}})
    result = render(make_sr(namespace="gpu-ops"), recipe, [make_node("a")])
    by_kind = {o.kind: o.body["metadata"] for o in result.objects}
    assert by_kind["ConfigMap"]["namespace"] == "gpu-ops" and "namespace" not in by_kind["ClusterRole"]
    for meta in by_kind.values():
        assert meta["labels"]["sro.dev/owner"] == "gpu" and meta["labels"]["sro.dev/state"] == "one"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            configmap().replace("  name: cm\n", "  name: cm\n  namespace: elsewhere\n"),
            "names namespace 'elsewhere'",
        ),
        (
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"
            "metadata: {name: n, namespace: x}\n",
            "is cluster-scoped",
        ),
        (
            "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n",
            "cannot tell whether kind Gadget",
        ),
    ],
)
def test_namespace_mistakes_are_refused(doc: str, message: str) -> None:
    with pytest.raises(RecipeInvalid, match=message):
        render(
            make_sr(),
            make_recipe({"one": {"x.yaml": doc}}),
            [make_node("a")],
            is_served=lambda api, kind: True,
        )


def test_naming_the_operand_namespace_explicitly_is_allowed() -> None:
    doc = configmap().replace("  name: cm\n", "  name: cm\n  namespace: '{{ namespace }}'\n")
    (obj,) = render(make_sr(), make_recipe({"one": {"x.yaml": doc}}), [make_node("a")]).objects
    assert obj.body["metadata"]["namespace"] == "gpu"


def test_the_owner_reference_is_added_without_touching_the_desired_body() -> None:
    sr = make_sr()
    (obj,) = render(sr, make_recipe({"one": {"x.yaml": configmap()}}), [make_node("a")]).objects
    owned = ownership.owned(obj, sr)
    assert owned.body["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "sro.dev/v1alpha1",
            "kind": "SpecialResource",
            "name": "gpu",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert "ownerReferences" not in obj.body["metadata"]
    assert (
        ownership.owned(owned, sr).body["metadata"]["ownerReferences"]
        == owned.body["metadata"]["ownerReferences"]
    )


POD_TOLERATING = """apiVersion: v1
kind: Pod
metadata:
  name: check
  annotations:
    sro.dev/per-node: "true"
spec:
  restartPolicy: Never
  tolerations:
{tolerations}  containers:
    - name: c
      image: img
"""


@pytest.mark.parametrize(
    ("written", "added"),
    [
        # The author's own limit on the not-ready taint stands; unreachable is still added.
        (
            [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 60,
                }
            ],
            ["node.kubernetes.io/unreachable"],
        ),
        # A toleration of every taint covers both.
        ([{"operator": "Exists"}], []),
        # One for another effect covers neither.
        (
            [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoSchedule"}],
            ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"],
        ),
    ],
)
def test_per_node_pods_keep_the_templates_own_node_condition_tolerations(
    written: list[dict[str, object]], added: list[str]
) -> None:
    lines = "".join(f"    - {json.dumps(t)}\n" for t in written)
    recipe = make_recipe({"validate": {"pod.yaml": POD_TOLERATING.format(tolerations=lines)}})
    result = render(make_sr(), recipe, [make_node("a"), make_node("b")])
    for obj in result.objects:
        assert spec_of(obj)["tolerations"] == [
            *written,
            *({"key": key, "operator": "Exists", "effect": "NoExecute"} for key in added),
        ]
