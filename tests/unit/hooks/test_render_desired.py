"""The pure entry point as a whole (sro.hooks.pipeline.render_desired).

Covers node selection, kernel groups, template values, states that render to nothing,
duplicate objects, collecting several errors at once, and determinism (equal inputs give
equal, sorted outputs whatever the node order).
"""

from __future__ import annotations

import json
import random

import pytest
from conftest import UBUNTU, configmap, daemonset, make_node, make_recipe, make_sr, pod, render

from sro.errors import RecipeInvalid, TemplateError
from sro.hooks import pipeline
from sro.model import desired, views
from sro.render import kinds, sources, templates, values

pytestmark = pytest.mark.unit


def test_template_values_cover_the_contract() -> None:
    doc = """apiVersion: v1
kind: ConfigMap
metadata: {name: values}
data:
  sr: "{{ sr.metadata.name }}"
  set: "{{ set.a }}/{{ set.b.c }}"
  namespace: "{{ namespace }}"
  recipe: "{{ recipe.name }}"
  state: "{{ state.name }}"
  selector: "{{ node_selector | tojson }}"
  cluster: "{{ cluster.version }} {{ cluster.major }} {{ cluster.minor }}"
  proxy: "{{ proxy.http }} {{ proxy.https }} {{ proxy.no_proxy }}"
  operator: "{{ operator.namespace }} {{ operator.image }} {{ operator.version }}"
"""
    recipe = make_recipe({"s": {"cm.yaml": doc}}, header="defaults: {a: 1, b: {c: 2, d: 3}}\n")
    sr = make_sr(set={"b": {"c": "two"}})
    result = render(
        sr,
        recipe,
        [make_node("a")],
        cluster_version="v1.36.3",
        proxy=values.ProxySettings(http="h", https="s", no_proxy="n"),
    )
    assert result.objects[0].body["data"] == {
        "sr": "gpu",
        "set": "1/two",
        "namespace": "gpu",
        "recipe": "demo",
        "state": "s",
        "selector": "{}",
        "cluster": "1.36.3 1 36",
        "proxy": "h s n",
        "operator": "sro-system sro:test 0.1.0",
    }


def test_kernel_affine_values_cover_the_contract() -> None:
    doc = """apiVersion: v1
kind: ConfigMap
metadata:
  name: k
  annotations:
    sro.dev/kernel-affine: "true"
data:
  kernel: "{{ kernel.full }} {{ kernel.version }} {{ kernel.major }}.{{ kernel.minor }}.{{ kernel.patch }}"
  release: "{{ kernel.release }} {{ kernel.arch }}"
  os: "{{ os.id }} {{ os.version_id }} {{ os.major }} {{ os.minor }} {{ os.tag }}"
"""
    (obj,) = render(make_sr(), make_recipe({"s": {"cm.yaml": doc}}), [make_node("a")]).objects
    assert obj.body["data"] == {
        "kernel": "5.14.0-427.13.1.el9_4.x86_64 5.14.0 5.14.0",
        "release": "427.13.1.el9_4 x86_64",
        "os": "rhel 9.4 9 4 rhel9.4",
    }


def test_only_nodes_matching_the_effective_selector_are_selected_and_grouped() -> None:
    nodes = [make_node("b"), make_node("a", UBUNTU), views.NodeView(name="cpu")]
    result = render(make_sr(), make_recipe({"s": {"cm.yaml": configmap()}}), nodes)
    assert result.nodes == ("a", "b")
    assert sorted(g.os.id for g in result.kernel_groups.values()) == ["rhel", "ubuntu"]


def test_a_state_that_renders_to_nothing_is_kept_with_no_objects() -> None:
    off = "{% if set.enabled %}\n" + configmap() + "{% endif %}\n"
    recipe = make_recipe(
        {"always": {"cm.yaml": configmap()}, "feature": {"cm.yaml": off}},
        header="defaults: {enabled: false}\n",
    )
    result = render(make_sr(), recipe, [make_node("a")])
    assert [s.name for s in result.states] == ["always", "feature"]
    assert result.objects_of("feature") == ()


def test_the_same_object_twice_is_refused_naming_both_places() -> None:
    recipe = make_recipe({"one": {"a.yaml": configmap()}, "two": {"b.yaml": configmap()}})
    with pytest.raises(RecipeInvalid) as caught:
        render(make_sr(), recipe, [make_node("a")])
    assert (
        str(caught.value)
        == "demo/two/b.yaml:4: ConfigMap/gpu/cm appears twice in the recipe (first at demo/one/a.yaml:4)"
    )


def test_all_problems_are_collected_and_the_first_is_raised_with_the_rest_as_notes() -> None:
    recipe = make_recipe(
        {"one": {"a.yaml": "x: {{ nope }}\n", "b.yaml": configmap(annotations='    sro.dev/x: "1"\n')}}
    )
    state, found = pipeline.collect_desired(
        make_sr(),
        recipe,
        [make_node("a")],
        env=pipeline.Environment(
            cluster_version="1.36",
            operator=values.OperatorInfo(),
            proxy=values.ProxySettings(),
            is_namespaced=kinds.builtin_is_namespaced,
            is_served=kinds.builtin_is_served,
        ),
    )
    assert state is None
    assert [type(e) for e in found.errors] == [TemplateError, RecipeInvalid]
    with pytest.raises(TemplateError) as caught:
        found.raise_first()
    assert any("sro.dev/x is unknown" in note for note in caught.value.__notes__)


def test_a_render_over_its_limits_stops_the_whole_recipe() -> None:
    big = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\n"
        "data:\n  x: '{% for i in range(2000) %}xxxxx{% endfor %}'\n"
    )
    with pytest.raises(TemplateError, match="exceeds"):
        render(
            make_sr(),
            make_recipe({"s": {"cm.yaml": big}}),
            [make_node("a")],
            limits=templates.Limits(output_bytes=5000),
        )


def test_equal_inputs_give_equal_sorted_output_whatever_the_node_order() -> None:
    recipe = sources.Library(sources.default_search_path()).get("nvidia-gpu")
    nodes = [
        make_node(f"n{i}", UBUNTU if i % 3 else ("5.14.0-427.13.1.el9_4.x86_64", "rhel", "9.4"))
        for i in range(12)
    ]
    first = render(make_sr("nvidia-gpu"), recipe, nodes)
    shuffled = list(nodes)
    random.Random(7).shuffle(shuffled)
    second = render(make_sr("nvidia-gpu"), recipe, shuffled)
    assert [o.body for o in first.objects] == [o.body for o in second.objects]
    order = [s.name for s in recipe.states]
    assert [order.index(o.state) for o in first.objects] == sorted(
        order.index(o.state) for o in first.objects
    )
    pods = [o.node for o in first.objects_of("state-driver-validation")]
    assert pods == sorted(pods) and len(pods) == 12


def test_the_nvidia_recipe_renders_every_state_for_two_kernel_groups() -> None:
    recipe = sources.Library(sources.default_search_path()).get("nvidia-gpu")
    result = render(make_sr("nvidia-gpu"), recipe, [make_node("r"), make_node("u", UBUNTU)])
    drivers = [o for o in result.objects_of("state-driver") if o.kind == "DaemonSet"]
    assert len(drivers) == 2 and all(o.wait_for_logs is not None for o in drivers)
    images = sorted(d.body["spec"]["template"]["spec"]["containers"][0]["image"] for d in drivers)
    assert images == [
        "nvcr.io/nvidia/driver:550.54.15-rhel9.4",
        "nvcr.io/nvidia/driver:550.54.15-ubuntu22.04",
    ]
    assert {o.kind for o in result.objects_of("state-grafana")} == {"Deployment", "ConfigMap"}
    assert len(result.warnings) == 2  # ServiceMonitor and PrometheusRule skipped offline
    plugin = result.objects_of("state-device-plugin-validation")
    assert all(p.body["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1 for p in plugin)


def test_a_pod_of_a_per_node_kind_with_no_selected_nodes_yields_nothing() -> None:
    recipe = make_recipe(
        {"s": {"p.yaml": pod(annotations='    sro.dev/per-node: "true"\n'), "d.yaml": daemonset()}}
    )
    result = render(make_sr(), recipe, [])
    assert [o.kind for o in result.objects] == ["DaemonSet"] and result.nodes == ()


def _printed(obj: desired.DesiredObject) -> str:
    return json.dumps(obj.body)  # key order included: it is what ``sro render`` prints


KERNEL_AFFINE_CHECK = make_recipe(
    {"s": {"p.yaml": pod(annotations='    sro.dev/per-node: "true"\n    sro.dev/kernel-affine: "true"\n')}}
)


@pytest.mark.parametrize("recipe_name", ["nvidia-gpu", "kernel-affine"])
def test_each_per_node_pod_is_what_its_node_alone_would_render(recipe_name: str) -> None:
    # Only the first node's pod of a template goes through the hooks; the others are
    # stamped from it. Each must equal the pod rendered for its node alone, which went
    # through every hook itself, down to the order of its keys: with node names that
    # are no valid label value (too long) before, between and after valid ones.
    if recipe_name == "kernel-affine":
        recipe = KERNEL_AFFINE_CHECK
    else:
        recipe = sources.Library(sources.default_search_path()).get(recipe_name)
    long = "n" * 70
    nodes = [
        make_node(f"{long}-a"),
        make_node("b"),
        make_node(f"{long}-c"),
        make_node("d", UBUNTU),
        make_node("e"),
    ]
    sr = make_sr(recipe_name)
    per_node = [o for o in render(sr, recipe, nodes).objects if o.node is not None]
    assert {o.node for o in per_node} == {n.name for n in nodes}
    for node in nodes:
        alone = sorted(_printed(o) for o in render(sr, recipe, [node]).objects if o.node is not None)
        mine = sorted(_printed(o) for o in per_node if o.node == node.name)
        assert mine == alone and mine
        assert all(o.body["spec"]["nodeName"] == node.name for o in per_node if o.node == node.name)
        labels = [o.body["metadata"]["labels"] for o in per_node if o.node == node.name]
        assert all(("sro.dev/node" in x) == (len(node.name) <= 63) for x in labels)
