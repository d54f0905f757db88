"""The install manifests on the real API server: they grant least privilege.

RBAC is checked through the API server's own authorizer: ``kubectl auth can-i`` for
what the service account needs and what it must not have, and real requests made as
the service account for what the escalation check allows (the built-in recipes' RBAC)
and refuses (binding cluster-admin, granting Secrets). The ownership admission policy
is checked the same way: as the service account, objects without the ``sro.dev/owner``
label cannot be created, changed (not even to add the label) or deleted. The manifests
are applied as ``test_manifests`` applies them (``manifests_install.installed``).

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
from manifests_install import NAMESPACE, REPO, _docs, installed, monitoring_crds
from support import waiting
from support.cluster import Cluster

pytestmark = pytest.mark.integration

__all__ = ["installed", "monitoring_crds"]  # fixtures

# The sro command (for `sro render`): the project's virtualenv unless SRO_E2E_SRO names another.
SRO = Path(os.environ.get("SRO_E2E_SRO") or REPO / ".venv" / "bin" / "sro")
SA = "system:serviceaccount:sro-system:sro"


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
