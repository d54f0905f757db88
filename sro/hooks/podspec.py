"""Where the pod template lives in each kind that runs pods.

Several hooks edit pod specs (placement, proxy, kernel selectors); this is the one place
that knows a DaemonSet keeps it at ``spec.template.spec`` and a CronJob two levels down.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sro.hooks import base

_TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": (),
    "DaemonSet": ("spec", "template"),
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


def runs_pods(kind: str) -> bool:
    return kind in _TEMPLATE_PATHS


def template_path(kind: str) -> tuple[str, ...] | None:
    """Where ``kind`` keeps its pod template (``()``: the object is the Pod), or None."""
    return _TEMPLATE_PATHS.get(kind)


def pod_template(body: dict[str, Any]) -> dict[str, Any] | None:
    """The object holding the pod's ``metadata`` and ``spec`` (the Pod itself for a Pod)."""
    path = _TEMPLATE_PATHS.get(str(body.get("kind", "")))
    if path is None:
        return None
    node = body
    for key in path:
        node = base.sub(node, key)
    return node


def read_template(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``pod_template`` for reading: nothing is created, a missing level is empty."""
    path = _TEMPLATE_PATHS.get(str(body.get("kind", "")))
    if path is None:
        return None
    node: Mapping[str, Any] = body
    for key in path:
        child = node.get(key)
        node = child if isinstance(child, Mapping) else {}
    return node


def pod_spec(body: dict[str, Any]) -> dict[str, Any] | None:
    template = pod_template(body)
    return None if template is None else base.sub(template, "spec")


def containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Every container and init container of a pod spec."""
    found: list[dict[str, Any]] = []
    for key in ("initContainers", "containers"):
        found.extend(c for c in spec.get(key) or () if isinstance(c, dict))
    return found
