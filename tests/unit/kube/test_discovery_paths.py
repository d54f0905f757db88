"""URL paths built from discovered resources: core and named groups, scopes, names, subresources."""

import pytest

from sro.kube import discovery

pytestmark = pytest.mark.unit


def test_a_core_namespaced_collection_and_object() -> None:
    pods = discovery.Resource(group="", version="v1", kind="Pod", plural="pods", namespaced=True)
    assert pods.api_version == "v1"
    assert pods.path(namespace="ops") == "/api/v1/namespaces/ops/pods"
    assert (
        pods.path(namespace="ops", name="p", subresource="status") == "/api/v1/namespaces/ops/pods/p/status"
    )
    assert pods.path() == "/api/v1/pods", "all namespaces"


def test_a_cluster_scoped_kind_ignores_the_namespace() -> None:
    sr = discovery.Resource(
        group="sro.dev",
        version="v1alpha1",
        kind="SpecialResource",
        plural="specialresources",
        namespaced=False,
    )
    assert sr.api_version == "sro.dev/v1alpha1"
    assert sr.path(namespace="ops", name="gpu") == "/apis/sro.dev/v1alpha1/specialresources/gpu"


def test_names_are_escaped() -> None:
    cms = discovery.Resource(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)
    assert cms.path(namespace="a", name="x/y") == "/api/v1/namespaces/a/configmaps/x%2Fy"
