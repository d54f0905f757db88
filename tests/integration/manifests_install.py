"""The install the manifest tests check, and the Prometheus operator's CRDs its monitoring
add-on is validated against.

``installed`` applies ``manifests/`` once per module that asks for it, as an
administrator would, and removes the operator's Deployment after the module.
``monitoring_crds`` installs a minimal, field-checked copy of the two Prometheus
operator CRDs (only if the cluster lacks them) for one test, and removes it. Shared by
``test_manifests``, ``test_manifests_least_privilege`` and ``test_helm_chart``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cluster import Cluster

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"
NAMESPACE = "sro-system"


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


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
