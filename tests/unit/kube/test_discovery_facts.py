"""The discovery snapshot as a value: kinds from discovery documents, scopes, served checks."""

from __future__ import annotations

import pytest

from sro.kube import discovery

pytestmark = pytest.mark.unit

APPS = {
    "kind": "APIResourceList",
    "groupVersion": "apps/v1",
    "resources": [
        {"name": "daemonsets", "kind": "DaemonSet", "namespaced": True},
        {"name": "daemonsets/status", "kind": "DaemonSet", "namespaced": True},
        {"name": "controllerrevisions", "kind": "ControllerRevision", "namespaced": True},
    ],
}
CORE = {"resources": [{"name": "nodes", "kind": "Node", "namespaced": False}, {"name": "", "kind": "Broken"}]}


def facts() -> discovery.ClusterFacts:
    return discovery.ClusterFacts(
        version=discovery.ServerVersion.from_body({"gitVersion": "v1.36.3", "major": "1", "minor": "36"}),
        group_versions={
            "apps/v1": discovery.kinds_from("apps/v1", APPS),
            "v1": discovery.kinds_from("v1", CORE),
            "metrics.k8s.io/v1beta1": {},
        },
    )


def test_kinds_scopes_and_paths_come_from_the_discovery_documents_without_subresources() -> None:
    f = facts()
    assert f.version.as_tuple() == ("v1.36.3", "1", "36")
    assert f.is_served("apps/v1", "DaemonSet") and f.is_namespaced("apps/v1", "DaemonSet") is True
    assert f.is_namespaced("v1", "Node") is False
    assert f.resource("apps/v1", "DaemonSet") == discovery.Resource(
        group="apps", version="v1", kind="DaemonSet", plural="daemonsets", namespaced=True
    )
    assert not f.is_served("v1", "Broken"), "an entry without a name is no resource"


def test_an_unserved_kind_or_group_version_has_no_scope() -> None:
    f = facts()
    assert not f.is_served("apps/v1", "StatefulSet") and f.is_namespaced("apps/v1", "StatefulSet") is None
    assert not f.is_served("example.com/v1", "Widget") and f.is_namespaced("example.com/v1", "Widget") is None
    assert f.knows("metrics.k8s.io/v1beta1") and not f.knows("example.com/v1")


def test_reading_one_group_version_again_gives_a_new_snapshot_and_leaves_the_old_one() -> None:
    old = facts()
    widgets = {"resources": [{"name": "widgets", "kind": "Widget", "namespaced": False}]}
    new = old.with_group_version("example.com/v1", discovery.kinds_from("example.com/v1", widgets))
    assert new.is_namespaced("example.com/v1", "Widget") is False and new.is_served("apps/v1", "DaemonSet")
    assert not old.is_served("example.com/v1", "Widget")
    gone = new.with_group_version("apps/v1", None)
    assert not gone.is_served("apps/v1", "DaemonSet") and gone.knows("apps/v1")


def test_every_group_version_is_listed_once_core_first() -> None:
    core = {"versions": ["v1"]}
    groups = {
        "groups": [
            {"name": "apps", "versions": [{"groupVersion": "apps/v1"}]},
            {"name": "x.io", "versions": [{"groupVersion": "x.io/v2"}, {"groupVersion": "x.io/v1"}]},
            {"name": "apps", "versions": [{"groupVersion": "apps/v1"}]},
        ]
    }
    assert discovery.group_versions_from(core, groups) == ["v1", "apps/v1", "x.io/v2", "x.io/v1"]
    assert discovery.group_versions_from({}, {}) == ["v1"]
