"""Who the hostile suite's operator is: a ServiceAccount holding exactly the Deployment's rights.

With the session's cluster-admin kubeconfig every kind can be listed, so a recipe asking
for a kind outside ``manifests/rbac/manager_role.yaml`` would pass unnoticed; as this
ServiceAccount the API server really refuses it, as it would in a cluster. Its Lease
lives in a namespace of the suite's own, so no other operator's election meets it. A test
that needs narrower rights binds it to a trimmed copy of the role (``manager_role_without``:
an operator that may not read pod logs).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml
from operator_process import REPO
from support import cluster as cluster_mod

ACCOUNT = "sro-hostile"
"""The ServiceAccount's name, in the namespace ``service_account_kubeconfig`` is given."""


def _ca_data(kubeconfig: Path) -> str:
    entry = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]
    if "certificate-authority-data" in entry:
        return str(entry["certificate-authority-data"])
    return base64.b64encode(Path(entry["certificate-authority"]).read_bytes()).decode()


def service_account_kubeconfig(
    cluster: cluster_mod.Cluster, namespace: str, base: Path, *, cluster_role: str = "sro-manager"
) -> Path:
    """A ServiceAccount with the Deployment's ClusterRole (or ``cluster_role``, bound by a
    ClusterRoleBinding named ``namespace``) and a Lease Role; a kubeconfig with its token."""
    account = ACCOUNT
    cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        str(REPO / "manifests" / "rbac" / "manager_role.yaml"),
    )
    rbac = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": namespace}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": namespace},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": cluster_role,
            },
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "leases", "namespace": namespace},
            "rules": [
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "verbs": ["get", "update", "create"],
                }
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "leases", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "leases"},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        },
    ]
    cluster.kubectl("create", "-f", "-", input=yaml.safe_dump_all(rbac))
    token = cluster.kubectl("create", "token", account, "-n", namespace, "--duration=2h").stdout.strip()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "sa",
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": cluster.server(),
                    "certificate-authority-data": _ca_data(cluster.kubeconfig),
                },
            }
        ],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "c", "user": account}}],
    }
    path = base / "service-account.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def manager_role_without(name: str, resources: frozenset[str]) -> dict[str, Any]:
    """The Deployment's ClusterRole (``manifests/rbac/manager_role.yaml``) named ``name``,
    without the rules that grant any of ``resources``: an administrator's trimmed copy."""
    role = yaml.safe_load((REPO / "manifests" / "rbac" / "manager_role.yaml").read_text())
    rules = [r for r in role["rules"] if not resources & set(r.get("resources") or ())]
    assert len(rules) < len(role["rules"]), f"no rule of the role grants {sorted(resources)}"
    return {**role, "metadata": {"name": name}, "rules": rules}
