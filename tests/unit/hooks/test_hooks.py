"""Each annotation hook, through the real pipeline (sro.hooks.*, sro.hooks.pipeline).

Covers kernel-affine copies (names, app labels, selectors, template values), wait and
wait-for-logs, per-node pods, proxy injection, optional kinds, the legacy
``specialresource.openshift.io/`` aliases, and refusal of unknown keys and bad values.
"""

from __future__ import annotations

import pytest
from conftest import UBUNTU, configmap, daemonset, make_node, make_recipe, make_sr, pod, render

from sro.errors import RecipeInvalid
from sro.hooks import kernel_affine, per_node, registry
from sro.model import names, recipe_policy, views
from sro.render import values

pytestmark = pytest.mark.unit

AFFINE = '    sro.dev/kernel-affine: "true"\n'


def test_a_kernel_affine_object_is_copied_per_kernel_group_with_its_values() -> None:
    doc = daemonset(annotations=AFFINE).replace(
        "image: img", 'image: "drv:{{ kernel.version }}-{{ os.tag }}"'
    )
    recipe = make_recipe({"s": {"ds.yaml": doc}})
    nodes = [make_node("a"), make_node("b"), make_node("c", UBUNTU)]
    result = render(make_sr(), recipe, nodes)
    images = sorted(o.body["spec"]["template"]["spec"]["containers"][0]["image"] for o in result.objects)
    assert images == ["drv:5.14.0-rhel9.4", "drv:5.15.0-ubuntu22.04"]
    assert {o.kernel_group for o in result.objects} == set(result.kernel_groups.values())


def test_kernel_affine_copies_get_suffixed_names_app_labels_and_group_selectors() -> None:
    recipe = make_recipe({"s": {"ds.yaml": daemonset(annotations=AFFINE)}})
    result = render(make_sr(), recipe, [make_node("a"), make_node("c", UBUNTU)])
    for obj in result.objects:
        group = obj.kernel_group
        assert group is not None
        name = obj.body["metadata"]["name"]
        assert name == kernel_affine.suffix("driver", group) and names.is_dns_label(name)
        assert obj.body["metadata"]["labels"]["app"] == name
        assert obj.body["spec"]["selector"]["matchLabels"]["app"] == name
        template = obj.body["spec"]["template"]
        assert template["metadata"]["labels"]["app"] == name
        selector = template["spec"]["nodeSelector"]
        assert selector[views.KERNEL_LABEL] == group.kernel
        assert selector[views.OS_ID_LABEL] == group.os.id
        assert selector[views.OS_VERSION_LABEL] == group.os.version_id


def test_a_service_selecting_a_kernel_affine_app_follows_the_rename() -> None:
    service = """apiVersion: v1
kind: Service
metadata:
  name: driver
  labels: {app: driver}
  annotations:
    sro.dev/kernel-affine: "true"
spec:
  selector: {app: driver}
  ports: [{port: 80}]
"""
    result = render(make_sr(), make_recipe({"s": {"svc.yaml": service}}), [make_node("a")])
    (svc,) = result.objects
    assert svc.body["spec"]["selector"]["app"] == svc.body["metadata"]["name"] != "driver"


def test_kernel_values_are_undefined_outside_kernel_affine_documents() -> None:
    doc = configmap().replace("  annotations:", "  labels: {k: '{{ kernel.version }}'}\n  annotations:")
    with pytest.raises(Exception, match="undefined value: 'kernel' is undefined"):
        render(make_sr(), make_recipe({"s": {"cm.yaml": doc}}), [make_node("a")])


def test_a_templated_kernel_affine_annotation_is_refused() -> None:
    doc = configmap(annotations="    sro.dev/kernel-affine: \"{{ 'true' }}\"\n")
    with pytest.raises(RecipeInvalid, match="must be written literally"):
        render(make_sr(), make_recipe({"s": {"cm.yaml": doc}}), [make_node("a")])


def test_workloads_are_waited_on_by_default_and_other_kinds_only_when_marked() -> None:
    docs = {
        "ds.yaml": daemonset(),
        "nowait.yaml": daemonset("nowait", annotations='    sro.dev/wait: "false"\n'),
        "cm.yaml": configmap(),
        "waited.yaml": configmap("waited", annotations='    sro.dev/wait: "true"\n'),
    }
    result = render(make_sr(), make_recipe({"s": docs}), [make_node("a")])
    assert {o.body["metadata"]["name"]: o.wait for o in result.objects} == {
        "driver": True,
        "nowait": False,
        "cm": False,
        "waited": True,
    }


def test_wait_for_logs_is_compiled_and_a_bad_regex_is_refused_at_validation() -> None:
    good = daemonset(annotations='    sro.dev/wait-for-logs: "driver (loaded|ready)"\n')
    (obj,) = render(make_sr(), make_recipe({"s": {"ds.yaml": good}}), [make_node("a")]).objects
    assert obj.wait_for_logs is not None and obj.wait_for_logs.search("driver loaded")
    bad = daemonset(annotations='    sro.dev/wait-for-logs: "driver (loaded"\n')
    with pytest.raises(RecipeInvalid, match="is not a valid regular expression"):
        render(make_sr(), make_recipe({"s": {"ds.yaml": bad}}), [make_node("a")])


def test_per_node_pods_are_one_per_selected_node_pinned_and_uniquely_named() -> None:
    doc = pod(annotations='    sro.dev/per-node: "true"\n')
    nodes = [make_node("n1"), make_node("n2"), make_node("Node.With.Dots"), make_node("other", **{"x": "y"})]
    sr = make_sr()
    result = render(sr, make_recipe({"s": {"pod.yaml": doc}}), [*nodes, views.NodeView(name="nogpu")])
    by_node = {o.node: o for o in result.objects}
    assert set(by_node) == {"n1", "n2", "Node.With.Dots", "other"}
    for node, obj in by_node.items():
        assert obj.body["spec"]["nodeName"] == node
        assert names.is_dns_label(obj.body["metadata"]["name"])
    assert by_node["n1"].body["metadata"]["name"] == "check-n1"
    assert by_node["Node.With.Dots"].body["metadata"]["name"] == per_node.node_name("check", "Node.With.Dots")
    assert len({o.body["metadata"]["name"] for o in result.objects}) == 4


def test_per_node_on_a_kernel_affine_pod_covers_only_that_groups_nodes() -> None:
    doc = pod(annotations=AFFINE + '    sro.dev/per-node: "true"\n')
    result = render(make_sr(), make_recipe({"s": {"p.yaml": doc}}), [make_node("a"), make_node("u", UBUNTU)])
    assert sorted((o.node, o.kernel_group.os.id if o.kernel_group else "") for o in result.objects) == [
        ("a", "rhel"),
        ("u", "ubuntu"),
    ]


def test_per_node_on_anything_but_a_pod_is_refused() -> None:
    with pytest.raises(RecipeInvalid, match="applies to Pods only"):
        render(
            make_sr(),
            make_recipe({"s": {"d.yaml": daemonset(annotations='    sro.dev/per-node: "true"\n')}}),
            [make_node("a")],
        )


def test_proxy_settings_go_into_every_container_in_both_cases_replacing_recipe_values() -> None:
    doc = daemonset(annotations='    sro.dev/proxy: "true"\n').replace(
        "          image: img\n",
        "          image: img\n          env: [{name: HTTP_PROXY, value: old}, {name: A, value: b}]\n",
    )
    proxy = values.ProxySettings(http="http://p:3128", https="http://p:3129", no_proxy=".svc")
    (obj,) = render(make_sr(), make_recipe({"s": {"ds.yaml": doc}}), [make_node("a")], proxy=proxy).objects
    env = {e["name"]: e["value"] for e in obj.body["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env == {
        "A": "b",
        "HTTP_PROXY": "http://p:3128",
        "http_proxy": "http://p:3128",
        "HTTPS_PROXY": "http://p:3129",
        "https_proxy": "http://p:3129",
        "NO_PROXY": ".svc",
        "no_proxy": ".svc",
    }


def test_without_a_proxy_nothing_is_injected() -> None:
    (obj,) = render(
        make_sr(),
        make_recipe({"s": {"ds.yaml": daemonset(annotations='    sro.dev/proxy: "true"\n')}}),
        [make_node("a")],
    ).objects
    assert "env" not in obj.body["spec"]["template"]["spec"]["containers"][0]


def test_an_unserved_optional_kind_is_skipped_with_a_warning_and_a_required_one_fails() -> None:
    monitor = configmap(
        "sm",
        api="monitoring.coreos.com/v1",
        kind="ServiceMonitor",
        annotations='    sro.dev/optional: "true"\n',
    )
    result = render(
        make_sr(), make_recipe({"s": {"sm.yaml": monitor, "cm.yaml": configmap()}}), [make_node("a")]
    )
    assert [o.kind for o in result.objects] == ["ConfigMap"]
    assert any("ServiceMonitor/sm" in w and "skipped (optional)" in w for w in result.warnings)
    required = monitor.replace('    sro.dev/optional: "true"\n', "")
    with pytest.raises(RecipeInvalid, match="is not served by the cluster"):
        render(make_sr(), make_recipe({"s": {"sm.yaml": required}}), [make_node("a")])


def test_a_served_optional_kind_is_kept_and_marked_optional() -> None:
    monitor = configmap(
        "sm",
        api="monitoring.coreos.com/v1",
        kind="ServiceMonitor",
        annotations='    sro.dev/optional: "true"\n',
    )
    (obj,) = render(
        make_sr(),
        make_recipe({"s": {"sm.yaml": monitor}}),
        [make_node("a")],
        is_served=lambda api, kind: True,
        is_namespaced=lambda api, kind: True,
    ).objects
    assert obj.optional and obj.body["metadata"]["namespace"] == "gpu"


def test_a_kind_served_by_a_crd_of_the_recipe_is_accepted_with_the_crds_scope() -> None:
    """Where the administrator's policy lets recipes ship CRDs (the default does not)."""
    crd = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Widget, plural: widgets}
  versions: [{name: v1, served: true, storage: true}]
"""
    widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"
    recipe = make_recipe({"crd": {"crd.yaml": crd}, "use": {"w.yaml": widget}})
    crds = recipe_policy.RecipePolicy(
        allowed_kinds=frozenset({("apiextensions.k8s.io", "CustomResourceDefinition")})
    )
    result = render(make_sr(), recipe, [make_node("a")], policy=crds)
    assert [o.kind for o in result.objects] == ["CustomResourceDefinition", "Widget"]
    assert "namespace" not in result.objects[1].body["metadata"]


def test_legacy_hook_keys_are_aliases_and_state_and_vendor_are_ignored_with_warnings() -> None:
    doc = daemonset(
        annotations=(
            '    specialresource.openshift.io/kernel-affine: "true"\n'
            '    specialresource.openshift.io/wait: "false"\n'
            '    specialresource.openshift.io/state: "driver-container"\n'
            '    specialresource.openshift.io/driver-container-vendor: "nvidia"\n'
        )
    )
    result = render(make_sr(), make_recipe({"s": {"ds.yaml": doc}}), [make_node("a")])
    (obj,) = result.objects
    assert obj.kernel_group is not None and obj.wait is False
    assert sum("is ignored in sro" in w for w in result.warnings) == 2


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        ('    sro.dev/kernel-afine: "true"\n', "annotation sro.dev/kernel-afine is unknown"),
        ('    specialresource.openshift.io/build: "true"\n', "specialresource.openshift.io/build is unknown"),
        ('    sro.dev/wait: "yes"\n', 'annotation sro.dev/wait: \'yes\' must be "true" or "false"'),
        ('    sro.dev/optional: "True"\n', 'must be "true" or "false"'),
    ],
)
def test_unknown_keys_and_invalid_values_are_recipe_invalid(annotation: str, message: str) -> None:
    with pytest.raises(RecipeInvalid) as caught:
        render(
            make_sr(), make_recipe({"s": {"cm.yaml": configmap(annotations=annotation)}}), [make_node("a")]
        )
    assert message in str(caught.value)
    assert str(caught.value).startswith("demo/s/cm.yaml:7: ConfigMap/cm: ")


def test_every_registered_hook_with_an_annotation_is_unique() -> None:
    keys = [h.annotation for h in registry.HOOKS if h.annotation]
    assert len(keys) == len(set(keys))
    assert set(keys) == {
        "builds",
        "build-from",
        "kernel-affine",
        "upgrade",
        "per-node",
        "optional",
        "proxy",
        "pin-digest",
        "wait",
        "wait-for-logs",
    }
