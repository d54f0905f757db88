"""The install manifests on the real API server: they apply, validate, and grant least privilege.

Covers ``manifests/`` as an administrator uses it: ``kubectl apply -k manifests/``
succeeds and is idempotent, the kustomize output passes a strict server-side dry-run,
the operator's pods are admitted under the ``restricted`` Pod Security Standard its
namespace enforces, and the monitoring add-on validates against the Prometheus
operator's CRDs (a minimal, field-checked copy is installed for the test and removed).
RBAC is checked through the API server's own authorizer: ``kubectl auth can-i`` for
what the service account needs and what it must not have, and real requests made as
the service account for what the escalation check allows (the built-in recipes' RBAC)
and refuses (binding cluster-admin, granting Secrets). The ownership admission policy
is checked the same way: as the service account, objects without the ``sro.dev/owner``
label cannot be created, changed (not even to add the label) or deleted.

Not covered here: that the operator process really works with these permissions
(the in-cluster end-to-end test runs it with the service account's token).
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import waiting
from support.cluster import Cluster

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"
# The sro command (for `sro render`): the project's virtualenv unless SRO_E2E_SRO names another.
SRO = Path(os.environ.get("SRO_E2E_SRO") or REPO / ".venv" / "bin" / "sro")
SA = "system:serviceaccount:sro-system:sro"
NAMESPACE = "sro-system"


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def _kustomize(cluster: Cluster, path: Path) -> list[dict[str, Any]]:
    return _docs(cluster.kubectl("kustomize", str(path)).stdout)


@pytest.fixture(scope="module")
def installed(cluster: Cluster) -> Iterator[str]:
    """``kubectl apply -k manifests/`` once for the module; its output is the fixture's value.

    The Deployment and its budget are removed afterwards so no operator pods linger on
    other tests' simulated nodes; the namespace, CRD and RBAC stay (other tests use them).
    """
    out = cluster.kubectl("apply", "--validate=strict", "-k", str(MANIFESTS)).stdout
    try:
        yield out
    finally:
        cluster.kubectl(
            "delete", "-n", NAMESPACE, "deployment/sro", "poddisruptionbudget/sro", "--ignore-not-found"
        )


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

# The fields of the Prometheus operator's CRDs that the add-on uses, with their real names
# and types, so a misspelt field fails strict validation as it would on a real cluster.
_STRING = {"type": "string"}
_STRING_MAP = {"type": "object", "additionalProperties": _STRING}
_MONITORING_CRDS = {
    "ServiceMonitor": {
        "type": "object",
        "properties": {
            "selector": {"type": "object", "properties": {"matchLabels": _STRING_MAP}},
            "namespaceSelector": {
                "type": "object",
                "properties": {"any": {"type": "boolean"}, "matchNames": {"type": "array", "items": _STRING}},
            },
            "jobLabel": _STRING,
            "endpoints": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        k: _STRING for k in ("port", "path", "interval", "scrapeTimeout", "scheme")
                    },
                },
            },
        },
    },
    "PrometheusRule": {
        "type": "object",
        "properties": {
            "groups": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "rules"],
                    "properties": {
                        "name": _STRING,
                        "interval": _STRING,
                        "rules": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["expr"],
                                "properties": {
                                    "alert": _STRING,
                                    "record": _STRING,
                                    "expr": {"x-kubernetes-int-or-string": True},
                                    "for": _STRING,
                                    "labels": _STRING_MAP,
                                    "annotations": _STRING_MAP,
                                },
                            },
                        },
                    },
                },
            }
        },
    },
}


def _monitoring_crd(kind: str) -> dict[str, Any]:
    plural = kind.lower() + "s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.monitoring.coreos.com"},
        "spec": {
            "group": "monitoring.coreos.com",
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": _MONITORING_CRDS[kind]},
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture
def monitoring_crds(cluster: Cluster) -> Iterator[None]:
    """The two Prometheus operator CRDs (only if the cluster lacks them), removed afterwards."""
    added = []
    for kind in _MONITORING_CRDS:
        crd = _monitoring_crd(kind)
        if cluster.kubectl("get", "crd", crd["metadata"]["name"], check=False).returncode != 0:
            cluster.create(crd)
            added.append(crd["metadata"]["name"])
    try:
        for name in added:
            cluster.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=30s")
        yield
    finally:
        if added:
            cluster.kubectl("delete", "crd", *added, "--ignore-not-found")


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


# --- RBAC: what the service account may and may not do ---------------------------------------


def _can(cluster: Cluster, *args: str) -> bool:
    proc = cluster.kubectl("auth", "can-i", *args, f"--as={SA}", check=False)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode == 0


NEEDED = [
    ("watch", "specialresources.sro.dev"),
    ("patch", "specialresources.sro.dev"),
    ("patch", "specialresources.sro.dev", "--subresource=status"),
    ("update", "specialresources.sro.dev", "--subresource=finalizers"),
    ("list", "nodes"),
    ("patch", "nodes"),
    ("create", "namespaces"),
    ("patch", "namespaces"),
    ("delete", "namespaces"),
    ("watch", "pods", "--all-namespaces"),
    ("delete", "pods", "-n", "nvidia-gpu"),
    ("get", "pods", "--subresource=log", "-n", "nvidia-gpu"),
    ("create", "events.events.k8s.io", "-n", "default"),
    ("patch", "events", "-n", "nvidia-gpu"),
    ("get", "leases/sro-leader", "-n", NAMESPACE),
    ("update", "leases/sro-leader", "-n", NAMESPACE),
    ("create", "leases", "-n", NAMESPACE),
    ("watch", "configmaps", "-n", NAMESPACE),
    ("create", "priorityclasses.scheduling.k8s.io"),
    ("patch", "daemonsets.apps", "-n", "nvidia-gpu"),
    ("watch", "controllerrevisions.apps", "--all-namespaces"),
    ("create", "deployments.apps", "-n", "nvidia-gpu"),
    ("create", "services", "-n", "nvidia-gpu"),
    ("create", "serviceaccounts", "-n", "nvidia-gpu"),
    ("create", "configmaps", "-n", "nvidia-gpu"),
    ("create", "roles.rbac.authorization.k8s.io", "-n", "nvidia-gpu"),
    ("create", "rolebindings.rbac.authorization.k8s.io", "-n", "nvidia-gpu"),
    ("create", "clusterroles.rbac.authorization.k8s.io"),
    ("delete", "clusterrolebindings.rbac.authorization.k8s.io"),
    ("get", "/apis"),
    ("get", "/version"),
]

FORBIDDEN = [
    ("get", "secrets", "--all-namespaces"),
    ("list", "secrets", "-n", NAMESPACE),
    ("escalate", "clusterroles.rbac.authorization.k8s.io"),
    ("bind", "clusterroles.rbac.authorization.k8s.io"),
    ("escalate", "roles.rbac.authorization.k8s.io", "-n", "nvidia-gpu"),
    ("impersonate", "serviceaccounts"),
    ("create", "pods", "--subresource=exec", "-n", "nvidia-gpu"),
    ("create", "serviceaccounts", "--subresource=token", "-n", "nvidia-gpu"),
    ("delete", "nodes"),
    ("patch", "controllerrevisions.apps", "-n", "nvidia-gpu"),  # read only: the DaemonSet controller's
    ("update", "nodes", "--subresource=status"),
    ("create", "specialresources.sro.dev"),
    ("delete", "specialresources.sro.dev"),
    ("update", "leases/kube-controller-manager", "-n", "kube-system"),
    ("update", "leases/another-lease", "-n", NAMESPACE),
    ("create", "leases", "-n", "kube-node-lease"),
    ("create", "customresourcedefinitions.apiextensions.k8s.io"),
    ("create", "mutatingwebhookconfigurations.admissionregistration.k8s.io"),
    ("approve", "certificatesigningrequests.certificates.k8s.io", "--subresource=approval"),
    ("*", "*"),
]


@pytest.mark.parametrize("args", NEEDED, ids=[" ".join(a) for a in NEEDED])
def test_the_service_account_can_do_what_the_operator_needs(
    cluster: Cluster, installed: str, args: tuple[str, ...]
) -> None:
    assert _can(cluster, *args)


def test_the_service_account_can_manage_the_monitoring_kinds_of_recipes_once_they_are_served(
    cluster: Cluster, installed: str, monitoring_crds: None
) -> None:
    # kubectl resolves the resource through discovery, so these are asked while it is served.
    for kind in ("servicemonitors", "prometheusrules"):
        for verb in ("get", "list", "watch", "create", "patch", "delete"):
            assert _can(cluster, verb, f"{kind}.monitoring.coreos.com", "-n", "nvidia-gpu"), (verb, kind)
        assert not _can(cluster, "update", f"{kind}.monitoring.coreos.com", "-n", "nvidia-gpu")


@pytest.mark.parametrize("args", FORBIDDEN, ids=[" ".join(a) for a in FORBIDDEN])
def test_the_service_account_cannot_do_what_the_operator_does_not_need(
    cluster: Cluster, installed: str, args: tuple[str, ...]
) -> None:
    assert not _can(cluster, *args)


# --- RBAC: the escalation check bounds what recipes may grant ----------------------------------


def _as_sa(cluster: Cluster, verb: str, obj: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl(verb, f"--as={SA}", "-f", "-", *extra, input=yaml.safe_dump(obj), check=False)


@pytest.fixture
def operand_namespace(cluster: Cluster) -> Iterator[str]:
    name = f"rbac-test-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        cluster.kubectl("delete", "namespace", name, "--wait=false")


def test_the_service_account_cannot_bind_cluster_admin(cluster: Cluster, installed: str) -> None:
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"rbac-test-{uuid.uuid4().hex[:8]}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "sro", "namespace": NAMESPACE}],
    }
    proc = _as_sa(cluster, "create", binding, "--dry-run=server")
    assert proc.returncode != 0
    assert "Forbidden" in proc.stderr and "not currently held" in proc.stderr


def test_the_service_account_cannot_create_a_role_granting_secrets(
    cluster: Cluster, installed: str, operand_namespace: str
) -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reads-secrets", "namespace": operand_namespace},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
    }
    proc = _as_sa(cluster, "create", role, "--dry-run=server")
    assert proc.returncode != 0
    assert "Forbidden" in proc.stderr and "not currently held" in proc.stderr


def _recipe_rbac(cluster: Cluster, recipe: str, sr_file: Path, namespace: str) -> list[dict[str, Any]]:
    """The RBAC objects ``sro render`` produces for a built-in recipe, moved to ``namespace``."""
    proc = subprocess.run(
        [
            str(SRO),
            "render",
            "--recipe",
            str(REPO / "assets" / recipe),
            "--sr",
            str(sr_file),
            "--nodes",
            str(REPO / "tests" / "golden" / "inventory.yaml"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, f"sro render {recipe} failed: {proc.stderr[-2000:]}"
    rbac = [d for d in _docs(proc.stdout) if d["apiVersion"].startswith("rbac.authorization.k8s.io/")]
    for doc in rbac:
        if "namespace" in doc["metadata"]:
            doc["metadata"]["namespace"] = namespace
        for subject in doc.get("subjects", []):
            if subject.get("kind") == "ServiceAccount":
                subject["namespace"] = namespace
        doc["metadata"].pop("ownerReferences", None)  # the SpecialResource does not exist here
    return rbac


def test_the_service_account_can_create_the_rbac_of_the_built_in_recipes(
    cluster: Cluster, installed: str, operand_namespace: str
) -> None:
    golden = REPO / "tests" / "golden"
    rbac = _recipe_rbac(cluster, "nvidia-gpu", golden / "nvidia-gpu.sr.yaml", operand_namespace)
    rbac += _recipe_rbac(cluster, "simple-kmod", golden / "simple-kmod.sr.yaml", operand_namespace)
    assert any(d["kind"] in ("Role", "ClusterRole") for d in rbac), "the built-in recipes hold no RBAC"
    # Roles before bindings: a binding is checked against the rules of the role it names.
    rbac.sort(key=lambda d: d["kind"].endswith("Binding"))
    made = []
    try:
        for doc in rbac:
            proc = _as_sa(cluster, "create", doc)
            assert proc.returncode == 0, f"{doc['kind']} {doc['metadata']['name']}: {proc.stderr}"
            made.append(doc)
    finally:
        for doc in made:
            if doc["kind"].startswith("Cluster"):
                cluster.kubectl("delete", doc["kind"].lower(), doc["metadata"]["name"], "--ignore-not-found")


# --- the ownership policy: only objects labelled sro.dev/owner ---------------------------------


def _denied_by_policy(proc: subprocess.CompletedProcess[str]) -> bool:
    return proc.returncode != 0 and "sro-owned-objects-only" in proc.stderr


@pytest.fixture
def unowned_namespace(cluster: Cluster, installed: str) -> Iterator[str]:
    """A namespace someone else made, once the policy is in force (policies load asynchronously)."""
    name = f"unowned-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", name)
    try:
        waiting.wait_for_sync(
            lambda: _denied_by_policy(
                cluster.kubectl("delete", "namespace", name, "--dry-run=server", f"--as={SA}", check=False)
            ),
            timeout=30,
            message="the ownership policy to refuse the service account",
        )
        yield name
    finally:
        cluster.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found")


def test_the_service_account_may_delete_only_namespaces_it_made(
    cluster: Cluster, unowned_namespace: str
) -> None:
    delete = ("delete", "namespace", unowned_namespace, "--dry-run=server", f"--as={SA}")
    # RBAC alone would allow it: namespaces are created and deleted by name at run time.
    assert _can(cluster, "delete", "namespaces")
    refused = cluster.kubectl(*delete, check=False)
    assert _denied_by_policy(refused), refused.stderr
    assert "sro.dev/owner" in refused.stderr
    cluster.kubectl("label", "namespace", unowned_namespace, "sro.dev/owner=some-sr")
    assert cluster.kubectl(*delete, check=False).returncode == 0


def test_the_service_account_cannot_create_an_unlabelled_object(
    cluster: Cluster, unowned_namespace: str
) -> None:
    role: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": f"unowned-{uuid.uuid4().hex[:8]}"},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}],
    }
    assert _denied_by_policy(_as_sa(cluster, "create", role, "--dry-run=server"))
    role["metadata"]["labels"] = {"sro.dev/owner": "some-sr"}
    proc = _as_sa(cluster, "create", role, "--dry-run=server")
    assert proc.returncode == 0, proc.stderr


def test_the_service_account_cannot_adopt_an_object_by_labelling_it(
    cluster: Cluster, unowned_namespace: str
) -> None:
    # A ClusterRole within the operator's own permissions, so RBAC's escalation check passes
    # and only the policy stands in the way.
    name = f"unowned-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "clusterrole", name, "--verb=get", "--resource=nodes")
    try:
        patch = json.dumps({"metadata": {"labels": {"sro.dev/owner": "some-sr"}}})
        proc = cluster.kubectl(
            "patch",
            "clusterrole",
            name,
            "--type=merge",
            "-p",
            patch,
            "--dry-run=server",
            f"--as={SA}",
            check=False,
        )
        assert _denied_by_policy(proc), proc.stderr
        delete = cluster.kubectl("delete", "clusterrole", name, "--dry-run=server", f"--as={SA}", check=False)
        assert _denied_by_policy(delete), delete.stderr
    finally:
        cluster.kubectl("delete", "clusterrole", name, "--ignore-not-found")
