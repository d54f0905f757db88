"""What sro knows about kinds without asking a cluster: scope and the workload kinds.

``render_desired`` takes ``is_namespaced`` and ``is_served`` callables so the operator
plugs in the live cluster's discovery; offline (``sro lint``, ``sro render``) these
tables stand in for it, plus the kinds ``--api-versions`` declares (``Declared``). A
kind missing from both is unknown offline: an error unless the object is marked optional.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

IsNamespaced = Callable[[str, str], "bool | None"]
"""(apiVersion, kind) -> True if namespaced, False if cluster-scoped, None if unknown."""
IsServed = Callable[[str, str], bool]
"""(apiVersion, kind) -> whether the cluster serves that kind."""

# Workloads: kinds that run pods and are waited on by default.
WORKLOADS = frozenset({"DaemonSet", "Deployment", "StatefulSet", "Job", "Pod"})
POD_TEMPLATES = frozenset({"DaemonSet", "Deployment", "StatefulSet", "Job", "ReplicaSet"})
"""Kinds whose ``spec.template`` makes Pods."""

_NAMESPACED: dict[str, frozenset[str]] = {
    "v1": frozenset(
        {
            "ConfigMap",
            "Secret",
            "Service",
            "ServiceAccount",
            "Pod",
            "PersistentVolumeClaim",
            "Endpoints",
            "LimitRange",
            "ResourceQuota",
            "Event",
            "ReplicationController",
            "PodTemplate",
        }
    ),
    "apps/v1": frozenset({"DaemonSet", "Deployment", "StatefulSet", "ReplicaSet", "ControllerRevision"}),
    "batch/v1": frozenset({"Job", "CronJob"}),
    "rbac.authorization.k8s.io/v1": frozenset({"Role", "RoleBinding"}),
    "policy/v1": frozenset({"PodDisruptionBudget"}),
    "networking.k8s.io/v1": frozenset({"NetworkPolicy", "Ingress"}),
    "autoscaling/v2": frozenset({"HorizontalPodAutoscaler"}),
    "coordination.k8s.io/v1": frozenset({"Lease"}),
    "discovery.k8s.io/v1": frozenset({"EndpointSlice"}),
    "events.k8s.io/v1": frozenset({"Event"}),
}
_CLUSTER: dict[str, frozenset[str]] = {
    "v1": frozenset({"Namespace", "Node", "PersistentVolume"}),
    "rbac.authorization.k8s.io/v1": frozenset({"ClusterRole", "ClusterRoleBinding"}),
    "scheduling.k8s.io/v1": frozenset({"PriorityClass"}),
    "storage.k8s.io/v1": frozenset({"StorageClass", "CSIDriver", "CSINode", "VolumeAttachment"}),
    "apiextensions.k8s.io/v1": frozenset({"CustomResourceDefinition"}),
    "admissionregistration.k8s.io/v1": frozenset(
        {
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        }
    ),
    "node.k8s.io/v1": frozenset({"RuntimeClass"}),
    "networking.k8s.io/v1": frozenset({"IngressClass"}),
    "resource.k8s.io/v1": frozenset({"DeviceClass"}),
}


def builtin_is_namespaced(api_version: str, kind: str) -> bool | None:
    """Scope of a built-in Kubernetes kind, or None when it is not in the table."""
    if kind in _NAMESPACED.get(api_version, ()):
        return True
    if kind in _CLUSTER.get(api_version, ()):
        return False
    return None


def builtin_is_served(api_version: str, kind: str) -> bool:
    """Whether a bare Kubernetes 1.36 control plane serves the kind (no add-ons)."""
    return builtin_is_namespaced(api_version, kind) is not None


# --- kinds declared for an offline render (``--api-versions``) --------------------------------

_VERSION = re.compile(r"v[1-9][0-9]*(?:(?:alpha|beta)[1-9][0-9]*)?")
_GROUP = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_KIND = re.compile(r"[A-Z][A-Za-z0-9]{0,62}")

_ADDON_SCOPES: dict[tuple[str, str], bool] = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): True,
    ("monitoring.coreos.com/v1", "PodMonitor"): True,
    ("monitoring.coreos.com/v1", "PrometheusRule"): True,
    ("monitoring.coreos.com/v1", "Probe"): True,
    ("monitoring.coreos.com/v1alpha1", "AlertmanagerConfig"): True,
    ("nfd.k8s-sigs.io/v1alpha1", "NodeFeatureRule"): False,
    ("nfd.k8s-sigs.io/v1alpha1", "NodeFeature"): True,
    ("security.openshift.io/v1", "SecurityContextConstraints"): False,
}
"""Scopes of the add-on kinds recipes commonly create; any other declared kind is taken
as namespaced (as most custom resources are)."""


def parse_api_version(text: str) -> tuple[str, str | None]:
    """``group/version``, ``group/version/Kind``, ``v1`` or ``v1/Kind`` (as ``helm template
    --api-versions`` takes them) as (apiVersion, Kind or None); ValueError saying why."""
    parts = text.strip().split("/")
    kind: str | None = None
    if len(parts) == 3 or (len(parts) == 2 and _VERSION.fullmatch(parts[0])):
        *parts, kind = parts
        if not _KIND.fullmatch(kind):
            raise ValueError(f"{text!r}: {kind!r} is not a kind (Kind is capitalised: ServiceMonitor)")
    if len(parts) == 2 and not _GROUP.fullmatch(parts[0]):
        raise ValueError(f"{text!r}: {parts[0]!r} is not an API group")
    if not parts or len(parts) > 2 or not _VERSION.fullmatch(parts[-1]):
        raise ValueError(f"{text!r} is not group/version or group/version/Kind (monitoring.coreos.com/v1)")
    return "/".join(parts), kind


@dataclass(frozen=True, kw_only=True)
class Declared:
    """The kinds an offline render takes as served: the built-in table, plus every kind of
    each declared group/version and each declared kind."""

    versions: frozenset[str] = frozenset()
    kinds: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> Declared:
        parsed = [parse_api_version(e) for e in entries]
        return cls(
            versions=frozenset(v for v, k in parsed if k is None),
            kinds=frozenset((v, k) for v, k in parsed if k is not None),
        )

    def declares(self, api_version: str, kind: str) -> bool:
        return api_version in self.versions or (api_version, kind) in self.kinds

    def is_namespaced(self, api_version: str, kind: str) -> bool | None:
        builtin = builtin_is_namespaced(api_version, kind)
        if builtin is not None or not self.declares(api_version, kind):
            return builtin
        return _ADDON_SCOPES.get((api_version, kind), True)

    def is_served(self, api_version: str, kind: str) -> bool:
        return builtin_is_served(api_version, kind) or self.declares(api_version, kind)


BUILTIN = Declared()
"""No kind declared: the built-in table alone."""
