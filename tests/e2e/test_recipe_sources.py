"""Drop-in recipes from ConfigMaps: used without a restart, and edits are noticed.

Covers contract section 2's ConfigMap source: a ConfigMap in the operator's namespace
labelled ``sro.dev/recipe: <name>`` (keys ``recipe.yaml`` and ``<state>__<file>.yaml``) is a
recipe; status says it came from a ConfigMap; editing the ConfigMap changes what the
SpecialResource's objects look like, with no operator restart.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import specialresources as srs
from conftest import Made, unique
from operator_process import Operator
from support import cluster as cluster_mod
from support import waiting

pytestmark = pytest.mark.e2e

OPERATOR_NAMESPACE = "sro-system"  # sro run's default --namespace
RECIPE = """\
description: a recipe from a ConfigMap
nodeSelector: {}
defaults:
  greeting: hello
states:
  - name: state-config
"""
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: greeting
data:
  text: "{{ set.greeting }} from a ConfigMap recipe"
"""


@pytest.fixture
def recipe_configmap(cluster: cluster_mod.Cluster, operator: Operator) -> Iterator[str]:
    name = unique("cm-recipe")
    cluster.kubectl("create", "namespace", OPERATOR_NAMESPACE, check=False)
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE, "labels": {"sro.dev/recipe": name}},
        "data": {"recipe.yaml": RECIPE, "state-config__configmap.yaml": CONFIGMAP},
    }
    cluster.kubectl("create", "-f", "-", input=json.dumps(body))
    try:
        yield name
    finally:
        cluster.kubectl(
            "delete", "configmap", name, "-n", OPERATOR_NAMESPACE, "--ignore-not-found", check=False
        )


async def test_a_configmap_recipe_is_used_and_its_edits_are_noticed(
    made: Made, recipe_configmap: str
) -> None:
    group, _ = made.group(
        "cmr", [{"count": 1, "kernel": "5.15.0-105-generic", "os": {"id": "ubuntu", "versionId": "22.04"}}]
    )
    selector = {srs.GROUP_LABEL: group}
    name = made.sr(srs.manifest(unique("cmr"), recipe=recipe_configmap, node_selector=selector))
    status = await srs.wait_ready(made.cluster, name, within=60)
    assert status["recipe"] == {"name": recipe_configmap, "source": "configmap"}

    def text() -> str:
        made_cm = srs.owned(made.cluster, "configmaps", name, namespace=name)
        return str(made_cm[0]["data"]["text"]) if made_cm else ""

    assert text() == "hello from a ConfigMap recipe"
    patch = {"data": {"recipe.yaml": RECIPE.replace("greeting: hello", "greeting: bonjour")}}
    made.cluster.kubectl(
        "patch",
        "configmap",
        recipe_configmap,
        "-n",
        OPERATOR_NAMESPACE,
        "--type=merge",
        "-p",
        json.dumps(patch),
    )
    await waiting.wait_for(
        lambda: text() == "bonjour from a ConfigMap recipe",
        timeout=60,
        interval=0.5,
        message="the edited recipe applied",
    )
