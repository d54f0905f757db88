"""What the chart renders, against what the kustomize tree renders (helm and kubectl from hack/build).

With the defaults, release ``sro`` in ``sro-system``, the chart and ``manifests/`` install the
same objects under the same names (the kustomize tree adds the Namespace, which Helm's
``--create-namespace`` makes): the same CRD, RBAC rules, admission policy, Service, budget
and operator settings (args, environment, ports, probes, security, resources). Values
change only what they name: the image (tag or digest, and SRO_IMAGE with it), the listen
ports, monitoring, drop-in recipes. ``helm lint --strict`` passes for the default and the
full values, and the schema stops a mistyped value before anything renders. Applying the
output to a server is test_helm_chart.py (integration) and the in-cluster e2e test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from support import chart

pytestmark = [pytest.mark.unit, pytest.mark.timeout(120)]

SAME_SPEC = [
    ("ClusterRole", "sro-manager"),
    ("ClusterRoleBinding", "sro-manager"),
    ("Role", "sro-leader-election"),
    ("RoleBinding", "sro-leader-election"),
    ("ClusterRole", "sro-specialresource-viewer"),
    ("ClusterRole", "sro-specialresource-editor"),
    ("ValidatingAdmissionPolicy", "sro-owned-objects-only"),
    ("ValidatingAdmissionPolicyBinding", "sro-owned-objects-only"),
    ("Service", "sro-metrics"),
    ("PodDisruptionBudget", "sro"),
]


@pytest.fixture(scope="module")
def kustomized() -> dict[tuple[str, str], dict[str, Any]]:
    return chart.index(chart.kustomize())


@pytest.fixture(scope="module")
def defaults() -> dict[tuple[str, str], dict[str, Any]]:
    return chart.index(chart.template(include_crds=True))


@pytest.fixture(scope="module")
def full() -> dict[tuple[str, str], dict[str, Any]]:
    return chart.index(chart.template(values=[chart.FULL_VALUES]))


def _body(doc: dict[str, Any]) -> Any:
    """Everything but metadata (labels differ: Helm's, kustomize's part-of), whitespace runs
    in strings as one space: kustomize re-folds the CEL of the admission policy (a folded
    block with a more-indented line gains a blank line), which CEL does not see."""
    return _squeezed({k: v for k, v in doc.items() if k != "metadata"})


def _squeezed(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, dict):
        return {k: _squeezed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_squeezed(v) for v in value]
    return value


def test_the_chart_and_the_kustomize_tree_install_the_same_objects(
    kustomized: dict[tuple[str, str], Any], defaults: dict[tuple[str, str], Any]
) -> None:
    assert set(kustomized) - {("Namespace", chart.NAMESPACE)} == set(defaults)
    for key, doc in defaults.items():
        assert doc["metadata"].get("namespace") == kustomized[key]["metadata"].get("namespace"), key


def test_the_crd_is_the_kustomize_trees_crd(
    kustomized: dict[tuple[str, str], Any], defaults: dict[tuple[str, str], Any]
) -> None:
    key = ("CustomResourceDefinition", "specialresources.sro.dev")
    assert defaults[key]["spec"] == kustomized[key]["spec"]


@pytest.mark.parametrize("key", SAME_SPEC, ids=lambda k: f"{k[0]}/{k[1]}")
def test_rbac_policy_service_and_budget_are_the_kustomize_trees(
    key: tuple[str, str],
    kustomized: dict[tuple[str, str], Any],
    defaults: dict[tuple[str, str], Any],
) -> None:
    assert _body(defaults[key]) == _body(kustomized[key])
    theirs, ours = kustomized[key]["metadata"].get("labels", {}), defaults[key]["metadata"].get("labels", {})
    assert {k: v for k, v in theirs.items() if k in ours} == {k: ours[k] for k in theirs if k in ours}
    assert set(theirs) <= set(ours), f"labels the chart lacks: {set(theirs) - set(ours)}"


def _pod(doc: dict[str, Any]) -> dict[str, Any]:
    return dict(doc["spec"]["template"]["spec"])


def test_the_operator_runs_with_the_kustomize_trees_settings_and_image(
    kustomized: dict[tuple[str, str], Any], defaults: dict[tuple[str, str], Any]
) -> None:
    theirs, ours = kustomized[("Deployment", "sro")], defaults[("Deployment", "sro")]
    assert {k: v for k, v in ours["spec"].items() if k != "template"} == {
        k: v for k, v in theirs["spec"].items() if k != "template"
    }
    assert _pod(ours) == _pod(theirs)
    labels = theirs["spec"]["template"]["metadata"]["labels"]
    assert labels.items() <= ours["spec"]["template"]["metadata"]["labels"].items()


def test_a_digest_pins_the_image_and_sro_image_follows_it(full: dict[tuple[str, str], Any]) -> None:
    (container,) = _pod(full[("Deployment", "sro")])["containers"]
    values = yaml.safe_load(chart.FULL_VALUES.read_text())["image"]
    assert container["image"] == f"{values['repository']}:{values['tag']}@{values['digest']}"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["SRO_IMAGE"] == container["image"]
    assert env["SRO_HTTPS_PROXY"] == "http://proxy.example.com:3128"


def test_the_default_tag_is_the_charts_app_version(defaults: dict[tuple[str, str], Any]) -> None:
    (container,) = _pod(defaults[("Deployment", "sro")])["containers"]
    app_version = yaml.safe_load((chart.CHART / "Chart.yaml").read_text())["appVersion"]
    assert container["image"].endswith(f":{app_version}")


def test_metrics_and_probes_listen_on_the_ports_the_values_name(full: dict[tuple[str, str], Any]) -> None:
    (container,) = _pod(full[("Deployment", "sro")])["containers"]
    assert "--metrics-bind-address=0.0.0.0:9090" in container["args"]
    assert "--health-probe-bind-address=0.0.0.0:9091" in container["args"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http-metrics": 9090, "healthz": 9091}
    assert container["livenessProbe"]["httpGet"]["port"] == "healthz"
    assert full[("Service", "sro-metrics")]["spec"]["ports"][0]["port"] == 9090


def test_monitoring_renders_the_kustomize_trees_alerts_and_dashboard(
    full: dict[tuple[str, str], Any],
) -> None:
    monitoring = chart.kustomize(chart.MANIFESTS / "monitoring")
    theirs = chart.index(monitoring)
    rule, monitor = ("PrometheusRule", "sro"), ("ServiceMonitor", "sro")
    assert full[rule]["spec"] == theirs[rule]["spec"]
    endpoint = {**theirs[monitor]["spec"]["endpoints"][0], "interval": "15s", "scrapeTimeout": "5s"}
    assert full[monitor]["spec"] == {**theirs[monitor]["spec"], "endpoints": [endpoint]}
    for key in (rule, monitor):
        assert full[key]["metadata"]["labels"]["release"] == "prometheus"
    dashboard = full[("ConfigMap", "sro-grafana-dashboard")]
    assert json.loads(dashboard["data"]["sro.json"]) == json.loads(
        theirs[("ConfigMap", "sro-grafana-dashboard")]["data"]["sro.json"]
    )
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"


def test_the_alerts_follow_the_metrics_service_of_another_release_name() -> None:
    rendered = chart.index(
        chart.template(set_values={"fullnameOverride": "accel", "monitoring.prometheusRule.enabled": "true"})
    )
    text = json.dumps(rendered[("PrometheusRule", "accel")]["spec"])
    assert 'job=\\"accel-metrics\\"' in text and "sro-metrics" not in text
    assert ("Service", "accel-metrics") in rendered
    policy = rendered[("ValidatingAdmissionPolicy", "accel-owned-objects-only")]
    assert "system:serviceaccount:sro-system:accel'" in policy["spec"]["matchConditions"][0]["expression"]


def test_recipes_in_values_become_labelled_configmaps_with_their_files_verbatim(
    full: dict[tuple[str, str], Any],
) -> None:
    recipe = full[("ConfigMap", "sro-recipe-acme-kmod")]
    values = yaml.safe_load(chart.FULL_VALUES.read_text())["recipes"]["acme-kmod"]
    assert recipe["metadata"]["labels"]["sro.dev/recipe"] == "acme-kmod"
    assert recipe["metadata"]["namespace"] == chart.NAMESPACE
    assert recipe["data"] == values


def test_helm_lint_passes_strictly_for_the_default_and_the_full_values() -> None:
    chart.run("helm", "lint", "--strict", str(chart.CHART))
    chart.run("helm", "lint", "--strict", str(chart.CHART), "--values", str(chart.FULL_VALUES))


def test_the_schema_stops_a_mistyped_value_before_anything_renders() -> None:
    with pytest.raises(AssertionError, match="logFormat"):
        chart.template(set_values={"logFormat": "JSON"})
    with pytest.raises(AssertionError, match="replicas"):
        chart.template(set_values={"replicas": "3"})
