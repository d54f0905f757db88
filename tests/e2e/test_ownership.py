"""Ownership is a reference, not a label: sro never deletes, counts or adopts what it did not make.

Covers: a tenant's ConfigMap labelled ``sro.dev/owner: <sr>`` in its own namespace is
neither deleted by a reconcile nor by the SpecialResource's teardown (and does not hold
the finalizer); a cluster-scoped object a recipe wants that already exists, made by
someone else, is refused (``ApplyFailed`` naming it) and left exactly as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
import specialresources as srs
from conftest import Made, unique
from support import waiting

pytestmark = pytest.mark.e2e

RECIPE = """\
description: an e2e drop-in recipe
nodeSelector:
  kubernetes.io/os: linux
states:
  - name: state-config
"""
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: greeting
data:
  text: hello
"""
CLUSTERROLE = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {name}
rules:
  - apiGroups: [""]
    resources: ["configmaps"]
    verbs: ["get"]
"""

UBUNTU = {"count": 1, "kernel": "5.15.0-105-generic", "os": {"id": "ubuntu", "versionId": "22.04"}}


def _recipe(files: Mapping[str, str]) -> dict[str, str]:
    return {"recipe.yaml": RECIPE, "state-config/configmap.yaml": CONFIGMAP, **files}


async def test_a_tenants_object_carrying_the_owner_label_is_never_deleted(
    made: Made, recipe_dir: Callable[..., Path]
) -> None:
    group, _ = made.group("own", [UBUNTU])
    recipe = unique("own")
    recipe_dir(recipe, _recipe({}))
    name = made.sr(srs.manifest(unique("own"), recipe=recipe, node_selector={srs.GROUP_LABEL: group}))
    await srs.wait_ready(made.cluster, name, within=90)

    tenant_ns = unique("tenant")
    made.cluster.kubectl("create", "namespace", tenant_ns)
    try:
        tenant = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "mine", "namespace": tenant_ns, "labels": {"sro.dev/owner": name}},
            "data": {"k": "v"},
        }
        made.cluster.kubectl("create", "-f", "-", input=json.dumps(tenant))
        # A spec change makes the operator reconcile (and see the tenant's object) at least once.
        patch = json.dumps({"spec": {"set": {"touch": "1"}}})
        made.cluster.kubectl("patch", "sr", name, "--type=merge", "-p", patch)
        await waiting.wait_for(
            lambda: srs.status(made.cluster, name).get("observedGeneration") == 2,
            timeout=60,
            message="the change was reconciled",
        )
        assert made.cluster.kubectl("get", "configmap", "mine", "-n", tenant_ns, check=False).returncode == 0

        srs.delete(made.cluster, name)
        await waiting.wait_for(
            lambda: srs.get(made.cluster, name) is None, timeout=90, message="teardown lets the SR go"
        )
        kept = made.cluster.kubectl_json("get", "configmap", "mine", "-n", tenant_ns)
        assert kept["data"] == {"k": "v"}, "the tenant's object is untouched"
    finally:
        made.cluster.kubectl("delete", "namespace", tenant_ns, "--wait=false", check=False)


async def test_an_existing_cluster_scoped_object_someone_else_made_is_never_adopted(
    made: Made, recipe_dir: Callable[..., Path]
) -> None:
    group, _ = made.group("own", [UBUNTU])
    role = unique("someone-elses")
    made.cluster.kubectl("create", "-f", "-", input=CLUSTERROLE.format(name=role))
    try:
        recipe = unique("adopt")
        recipe_dir(recipe, _recipe({"state-config/clusterrole.yaml": CLUSTERROLE.format(name=role)}))
        name = made.sr(srs.manifest(unique("adopt"), recipe=recipe, node_selector={srs.GROUP_LABEL: group}))
        cond = await srs.wait_degraded(made.cluster, name, "ApplyFailed", within=90)
        assert f"ClusterRole/{role}" in cond["message"] and "never adopts" in cond["message"], cond["message"]
        live = made.cluster.kubectl_json("get", "clusterrole", role)
        assert "sro.dev/owner" not in (live["metadata"].get("labels") or {})
        assert not live["metadata"].get("ownerReferences")
    finally:
        made.cluster.kubectl("delete", "clusterrole", role, check=False)
