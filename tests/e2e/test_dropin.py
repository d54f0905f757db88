"""Drop-in recipes: added and edited while the operator runs, noticed without a restart.

Two sources an administrator can use without rebuilding the image: a ConfigMap in the
operator's namespace labelled ``sro.dev/recipe: <name>`` (keys ``recipe.yaml`` and
``<state>__<file>.yaml``), and a directory given to ``sro run --recipes``. For each: a
SpecialResource using a recipe that only the drop-in provides becomes Ready with
``status.recipe.source`` naming the source; an edit is re-rendered and applied by the same
operator process; an edit that breaks the recipe turns the SpecialResource ``Degraded``
with ``RecipeInvalid`` and leaves what the valid version made in place.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import specialresources as srs
from conftest import Made, unique
from operator_process import Operator
from support import cluster as cluster_mod
from support import waiting

pytestmark = pytest.mark.e2e

OPERATOR_NAMESPACE = "sro-system"  # sro run's default --namespace, which the e2e operator keeps
RECIPE_LABEL = "sro.dev/recipe"
RHEL = {"kernel": "5.14.0-427.13.1.el9_4.x86_64", "os": {"id": "rhel", "versionId": "9.4"}}

RECIPE_YAML = """\
description: a drop-in test recipe
nodeSelector:
  e2e.sro.dev/never: "set"
defaults:
  tag: "1.0"
states:
  - name: state-agent
"""

DAEMONSET = """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: dropin-agent
  labels:
    app: dropin-agent
spec:
  selector:
    matchLabels:
      app: dropin-agent
  template:
    metadata:
      labels:
        app: dropin-agent
    spec:
      containers:
        - name: agent
          image: "registry.example.com/dropin/agent:{{ set.tag }}"
"""

BROKEN_RECIPE_YAML = RECIPE_YAML.replace("nodeSelector:", "nodeSelecter:")


@pytest.fixture
def operator_namespace(cluster: cluster_mod.Cluster) -> Iterator[str]:
    """The operator's namespace, created for the test if it does not exist (and then removed)."""
    created = cluster.kubectl("create", "namespace", OPERATOR_NAMESPACE, check=False).returncode == 0
    try:
        yield OPERATOR_NAMESPACE
    finally:
        if created:
            cluster.kubectl("delete", "namespace", OPERATOR_NAMESPACE, "--wait=false", check=False)


def _configmap(name: str, recipe: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {RECIPE_LABEL: recipe}},
        "data": data,
    }


def _patch_data(made: Made, namespace: str, configmap: str, data: dict[str, str]) -> None:
    patch = json.dumps({"data": data})
    made.cluster.kubectl("patch", "configmap", configmap, "-n", namespace, "--type=merge", "-p", patch)


def _image(made: Made, sr: str) -> str:
    daemonsets = srs.owned(made.cluster, "daemonsets", sr, namespace=sr)
    images = {ds["spec"]["template"]["spec"]["containers"][0]["image"] for ds in daemonsets}
    assert len(images) == 1, images
    return images.pop()


async def _image_becomes(made: Made, sr: str, image: str) -> None:
    await waiting.wait_for(
        lambda: _image(made, sr) == image,
        timeout=90,
        interval=0.5,
        message=f"the DaemonSet of {sr} runs {image}",
    )


async def test_a_configmap_recipe_is_found_re_rendered_on_edit_and_never_silently_replaced_by_a_broken_one(
    made: Made, operator: Operator, operator_namespace: str
) -> None:
    group, _ = made.group("cmrec", [{"count": 1, **RHEL}])
    recipe = unique("cm-recipe")
    configmap = f"{recipe}-v"
    made.cluster.apply(
        _configmap(
            configmap,
            recipe,
            {
                "recipe.yaml": RECIPE_YAML,
                "state-agent__daemonset.yaml": DAEMONSET,
            },
        ),
        namespace=operator_namespace,
    )
    starts = operator.starts
    try:
        name = made.sr(srs.manifest(unique("cmsr"), recipe=recipe, node_selector={srs.GROUP_LABEL: group}))
        status = await srs.wait_ready(made.cluster, name, within=120)
        assert status["recipe"] == {"name": recipe, "source": "configmap"}
        assert _image(made, name) == "registry.example.com/dropin/agent:1.0"

        # An edit while the operator runs: re-rendered and applied by the same process.
        edited = DAEMONSET.replace("{{ set.tag }}", "{{ set.tag }}-patched")
        _patch_data(made, operator_namespace, configmap, {"state-agent__daemonset.yaml": edited})
        await _image_becomes(made, name, "registry.example.com/dropin/agent:1.0-patched")
        await srs.wait_ready(made.cluster, name, within=120)

        # A broken edit: reported, and what the valid version made stays.
        _patch_data(made, operator_namespace, configmap, {"recipe.yaml": BROKEN_RECIPE_YAML})
        cond = await srs.wait_degraded(made.cluster, name, "RecipeInvalid", within=90)
        assert "nodeSelecter" in cond["message"], cond["message"]
        assert configmap in cond["message"], "the message names the ConfigMap"
        assert _image(made, name) == "registry.example.com/dropin/agent:1.0-patched"
        assert operator.alive() and operator.starts == starts, "noticed without a restart"
    finally:
        made.cluster.kubectl(
            "delete", "configmap", configmap, "-n", operator_namespace, "--ignore-not-found", check=False
        )


async def test_a_directory_recipe_is_found_re_rendered_on_edit_and_never_silently_replaced_by_a_broken_one(
    made: Made, operator: Operator, recipe_dir: Callable[[str, dict[str, str]], Path]
) -> None:
    group, _ = made.group("dirrec", [{"count": 1, **RHEL}])
    recipe = unique("dir-recipe")
    root = recipe_dir(recipe, {"recipe.yaml": RECIPE_YAML, "state-agent/daemonset.yaml": DAEMONSET})
    starts = operator.starts
    name = made.sr(srs.manifest(unique("dirsr"), recipe=recipe, node_selector={srs.GROUP_LABEL: group}))
    status = await srs.wait_ready(made.cluster, name, within=120)
    assert status["recipe"] == {"name": recipe, "source": "directory"}
    assert _image(made, name) == "registry.example.com/dropin/agent:1.0"

    edited = DAEMONSET.replace("{{ set.tag }}", "{{ set.tag }}-edited")
    (root / "state-agent" / "daemonset.yaml").write_text(edited)
    await _image_becomes(made, name, "registry.example.com/dropin/agent:1.0-edited")

    (root / "recipe.yaml").write_text(BROKEN_RECIPE_YAML)
    cond = await srs.wait_degraded(made.cluster, name, "RecipeInvalid", within=90)
    assert "nodeSelecter" in cond["message"] and "recipe.yaml" in cond["message"], cond["message"]
    assert _image(made, name) == "registry.example.com/dropin/agent:1.0-edited"
    assert operator.alive() and operator.starts == starts, "noticed without a restart"
