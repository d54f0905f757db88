"""The install manifests on the real API server: they apply and validate.

Covers ``manifests/`` as an administrator uses it: ``kubectl apply -k manifests/``
succeeds and is idempotent, the kustomize output passes a strict server-side dry-run,
the operator's pods are admitted under the ``restricted`` Pod Security Standard its
namespace enforces, and the monitoring add-on validates against the Prometheus
operator's CRDs (a minimal, field-checked copy is installed for the test and removed:
``manifests_install``). That they grant least privilege is
``test_manifests_least_privilege``'s subject.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from manifests_install import MANIFESTS, NAMESPACE, _docs, installed, monitoring_crds
from support import waiting
from support.cluster import Cluster

pytestmark = pytest.mark.integration

__all__ = ["installed", "monitoring_crds"]  # fixtures


def _kustomize(cluster: Cluster, path: Path) -> list[dict[str, Any]]:
    return _docs(cluster.kubectl("kustomize", str(path)).stdout)


# --- install -------------------------------------------------------------------------------


def test_apply_k_manifests_creates_every_object_kustomize_renders(cluster: Cluster, installed: str) -> None:
    rendered = _kustomize(cluster, MANIFESTS)
    kinds = {d["kind"] for d in rendered}
    assert {
        "Namespace",
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
    } <= kinds
    for doc in rendered:
        meta = doc["metadata"]
        args = ["get", doc["kind"].lower(), meta["name"]]
        if "namespace" in meta:
            args += ["-n", meta["namespace"]]
        assert cluster.kubectl(*args, check=False).returncode == 0, f"{doc['kind']} {meta['name']} missing"


def test_a_second_apply_leaves_nothing_to_change(cluster: Cluster, installed: str) -> None:
    cluster.kubectl("apply", "-k", str(MANIFESTS))
    # kubectl diff (a server-side dry run of the same apply) exits 0 when the live objects
    # already are what the manifests say. "configured" from apply is no proof either way:
    # client-side apply always re-sends a PodDisruptionBudget's selector (patch strategy
    # "replace"), a patch the server then finds empty.
    proc = cluster.kubectl("diff", "-k", str(MANIFESTS), check=False)
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stdout + proc.stderr


def test_the_kustomize_output_passes_a_strict_server_side_dry_run(cluster: Cluster, installed: str) -> None:
    text = cluster.kubectl("kustomize", str(MANIFESTS)).stdout
    proc = cluster.kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-", input=text)
    assert proc.stderr.strip() == "", proc.stderr  # no warnings either (deprecations, PSA)
    assert len(proc.stdout.splitlines()) == len(_docs(text))


def test_the_crd_of_the_install_becomes_established(cluster: Cluster, installed: str) -> None:
    def established() -> bool:
        crd = cluster.kubectl_json("get", "crd", "specialresources.sro.dev")
        return any(
            c["type"] == "Established" and c["status"] == "True" for c in crd["status"].get("conditions", [])
        )

    assert waiting.wait_for_sync(established, timeout=30, message="the SpecialResource CRD to be Established")


def test_the_operator_pods_are_admitted_under_the_restricted_pod_security_standard(
    cluster: Cluster, installed: str
) -> None:
    ns = cluster.kubectl_json("get", "namespace", NAMESPACE)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"

    def created() -> dict[str, Any] | None:
        deployment = cluster.kubectl_json("get", "deployment", "sro", "-n", NAMESPACE)
        return deployment if deployment.get("status", {}).get("replicas") == 2 else None

    # A pod the policy refuses is never created: the ReplicaSet reports FailedCreate and
    # the Deployment stays at 0 replicas.
    waiting.wait_for_sync(created, timeout=60, message="the Deployment's two pods to be created")
    pods = cluster.kubectl_json(
        "get", "pods", "-n", NAMESPACE, "-l", "app.kubernetes.io/name=sro,app.kubernetes.io/component=manager"
    )["items"]
    assert len(pods) == 2
    assert all(p["spec"]["serviceAccountName"] == "sro" for p in pods)


def test_the_deployment_runs_sro_run_with_leader_election_probes_limits_and_a_locked_down_container(
    cluster: Cluster, installed: str
) -> None:
    deployment = cluster.kubectl_json("get", "deployment", "sro", "-n", NAMESPACE)
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert spec["replicas"] == 2
    assert container["args"][0] == "run"
    assert "--leader-elect=true" in container["args"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}
    assert set(container["resources"]["limits"]) == {"cpu", "memory"}
    security = container["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    env = {e["name"]: e for e in container["env"]}
    assert env["SRO_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert env["SRO_IMAGE"]["value"] == container["image"]


def test_the_sample_specialresources_pass_a_server_side_dry_run(cluster: Cluster, installed: str) -> None:
    proc = cluster.kubectl("apply", "--dry-run=server", "--validate=strict", "-k", str(MANIFESTS / "samples"))
    assert sorted(proc.stdout.split("\n")[:-1]) == [
        "specialresource.sro.dev/nvidia-gpu created (server dry run)",
        "specialresource.sro.dev/simple-kmod created (server dry run)",
    ]


# --- monitoring ----------------------------------------------------------------------------


def test_the_monitoring_add_on_validates_against_the_prometheus_operator_crds(
    cluster: Cluster, installed: str, monitoring_crds: None
) -> None:
    rendered = _kustomize(cluster, MANIFESTS / "monitoring")
    assert sorted(d["kind"] for d in rendered) == ["ConfigMap", "PrometheusRule", "ServiceMonitor"]
    proc = cluster.kubectl(
        "apply", "--dry-run=server", "--validate=strict", "-k", str(MANIFESTS / "monitoring")
    )
    assert len(proc.stdout.splitlines()) == 3, proc.stdout
    dashboard = next(d for d in rendered if d["kind"] == "ConfigMap")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["sro.json"])["panels"]


def test_the_service_monitor_selects_the_metrics_service_and_its_port(
    cluster: Cluster, installed: str
) -> None:
    monitor = next(d for d in _kustomize(cluster, MANIFESTS / "monitoring") if d["kind"] == "ServiceMonitor")
    service = cluster.kubectl_json("get", "service", "sro-metrics", "-n", NAMESPACE)
    labels = service["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in monitor["spec"]["selector"]["matchLabels"].items())
    assert {p["name"] for p in service["spec"]["ports"]} >= {e["port"] for e in monitor["spec"]["endpoints"]}

    def endpoints() -> list[Any]:
        slices = cluster.kubectl_json(
            "get", "endpointslices", "-n", NAMESPACE, "-l", "kubernetes.io/service-name=sro-metrics"
        )["items"]
        return [e for s in slices for e in s.get("endpoints") or []]

    found = waiting.wait_for_sync(endpoints, timeout=60, message="the metrics Service to select the pods")
    assert len(found) == 2
