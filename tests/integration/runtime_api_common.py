"""What the runtime API tests share: settings that reach the test cluster's API server,
and a namespaced ``Widget`` CRD (a status subresource, a validated ``spec.size``) to
install in an API group of a test's own.
"""

from __future__ import annotations

from typing import Any

from sro import settings


def api_settings(cluster: Any) -> settings.ApiSettings:
    return settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))


def crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"size": {"type": "integer", "minimum": 1}},
                                },
                                "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                            },
                        }
                    },
                }
            ],
        },
    }
