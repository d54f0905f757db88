"""What sro knows about kinds without asking a cluster: scope and the workload kinds.

``render_desired`` takes ``is_namespaced`` and ``is_served`` callables so the operator
plugs in the live cluster's discovery; offline (``sro lint``, ``sro render``) these
tables stand in for it. A kind missing from the table is unknown offline: an error
unless the object is marked optional.
"""

from __future__ import annotations

from collections.abc import Callable

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
