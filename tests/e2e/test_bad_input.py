"""Bad input, one case each: the exact reason, the file and line, nothing written, others served.

Covers acceptance test 7 with drop-in recipes the test writes into the operator's recipe
directory: a YAML error, an undefined template value, an unknown ``sro.dev/`` annotation,
a cycle in ``after``, a kind the cluster does not serve, a kind the recipe policy denies
(a Node), a label reserved for the operator, a missing recipe, a ``set`` key the
recipe's ``values.schema.json`` does not allow (naming the key), and an object
the API server refuses (found by the server-side dry-run before any write of its state).
After each, a good SpecialResource on the same node still becomes Ready.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
import specialresources as srs
from conftest import Made, unique

pytestmark = pytest.mark.e2e

RECIPE = """\
description: an e2e drop-in recipe
nodeSelector:
  kubernetes.io/os: linux
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
  text: "{{ set.greeting }}"
"""
CYCLE = """\
description: two states waiting for each other
nodeSelector: {}
states:
  - name: state-a
    after: [state-b]
  - name: state-b
    after: [state-a]
"""

CASES: dict[str, tuple[dict[str, str], str, str]] = {
    # name: (files, reason, text the condition message must contain)
    "yaml-error": (
        {"state-config/configmap.yaml": CONFIGMAP.replace('"{{ set.greeting }}"', "[unclosed")},
        "RecipeInvalid",
        "state-config/configmap.yaml:",
    ),
    "undefined-value": (
        {"state-config/configmap.yaml": CONFIGMAP.replace("set.greeting", "set.nowhere")},
        "TemplateError",
        "state-config/configmap.yaml:6",
    ),
    "unknown-annotation": (
        {
            "state-config/configmap.yaml": CONFIGMAP.replace(
                "  name: greeting\n", '  name: greeting\n  annotations:\n    sro.dev/bogus: "true"\n'
            )
        },
        "RecipeInvalid",
        "state-config/configmap.yaml:",
    ),
    "cycle": (
        {
            "recipe.yaml": CYCLE,
            "state-a/configmap.yaml": CONFIGMAP,
            "state-b/configmap.yaml": CONFIGMAP.replace("greeting\n", "other\n", 1),
        },
        "RecipeInvalid",
        "recipe.yaml:",
    ),
    "unserved-kind": (
        {"state-config/widget.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"},
        "RecipeInvalid",
        "state-config/widget.yaml:",
    ),
    "node-document": (  # the recipe policy: a recipe may not force-apply a Node
        {"state-config/node.yaml": "apiVersion: v1\nkind: Node\nmetadata:\n  name: forged\n"},
        "RecipeInvalid",
        "state-config/node.yaml:2",
    ),
    "forged-owner-label": (
        {
            "state-config/configmap.yaml": CONFIGMAP.replace(
                "  name: greeting\n", "  name: greeting\n  labels:\n    sro.dev/owner: someone-else\n"
            )
        },
        "RecipeInvalid",
        "state-config/configmap.yaml:2",
    ),
    "refused-object": (
        {"state-config/configmap.yaml": CONFIGMAP.replace("  text:", "  bad key!:")},
        "ApplyFailed",
        "state-config/configmap.yaml:1",
    ),
}


def _files(overrides: Mapping[str, str]) -> dict[str, str]:
    files = {"recipe.yaml": RECIPE, "state-config/configmap.yaml": CONFIGMAP}
    files.update(overrides)
    if "recipe.yaml" in overrides and overrides["recipe.yaml"] == CYCLE:
        del files["state-config/configmap.yaml"]
    return files


async def _check(made: Made, name: str, group: str, reason: str, where: str) -> None:
    cond = await srs.wait_degraded(made.cluster, name, reason, within=60)
    assert where in cond["message"], cond["message"]
    ready = srs.condition(srs.status(made.cluster, name), "Ready")
    assert ready["status"] == "False" and ready["reason"] == reason
    for node in srs.nodes(made.cluster, {srs.GROUP_LABEL: group}):
        assert srs.sr_labels(node, name) == {}
    assert srs.owned(made.cluster, "configmaps", name) == []
    if reason != "ApplyFailed":  # a refused object leaves its state unwritten, the namespace exists
        assert made.cluster.kubectl("get", "namespace", name, check=False).returncode != 0


async def _others_still_served(made: Made, group: str, recipe_dir: Callable[..., Path]) -> None:
    good = unique("good")
    recipe_dir(good, _files({}))
    name = made.sr(srs.manifest(unique("good"), recipe=good, node_selector={srs.GROUP_LABEL: group}))
    await srs.wait_ready(made.cluster, name, within=60)


@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_bad_recipe_is_reported_with_its_reason_and_location_and_nothing_is_written(
    made: Made, recipe_dir: Callable[..., Path], case: str
) -> None:
    overrides, reason, where = CASES[case]
    group, _ = made.group(
        "bad", [{"count": 1, "kernel": "5.15.0-105-generic", "os": {"id": "ubuntu", "versionId": "22.04"}}]
    )
    recipe = unique(case)
    recipe_dir(recipe, _files(overrides))
    name = made.sr(srs.manifest(unique("bad"), recipe=recipe, node_selector={srs.GROUP_LABEL: group}))
    await _check(made, name, group, reason, where)
    await _others_still_served(made, group, recipe_dir)


async def test_a_missing_recipe_is_reported_and_nothing_is_written(
    made: Made, recipe_dir: Callable[..., Path]
) -> None:
    group, _ = made.group(
        "bad", [{"count": 1, "kernel": "5.15.0-105-generic", "os": {"id": "ubuntu", "versionId": "22.04"}}]
    )
    missing = unique("no-such-recipe")
    name = made.sr(srs.manifest(unique("bad"), recipe=missing, node_selector={srs.GROUP_LABEL: group}))
    await _check(made, name, group, "RecipeNotFound", missing)
    await _others_still_served(made, group, recipe_dir)


SCHEMA = '{"type": "object", "additionalProperties": false, "properties": {"greeting": {"type": "string"}}}'


async def test_a_set_that_breaks_the_recipe_s_values_schema_is_recipe_invalid_naming_the_key(
    made: Made, recipe_dir: Callable[..., Path]
) -> None:
    group, _ = made.group(
        "bad", [{"count": 1, "kernel": "5.15.0-105-generic", "os": {"id": "ubuntu", "versionId": "22.04"}}]
    )
    recipe = unique("schema")
    recipe_dir(recipe, {**_files({}), "values.schema.json": SCHEMA})
    typo = {"greetin": "hi"}
    name = made.sr(
        srs.manifest(unique("bad"), recipe=recipe, node_selector={srs.GROUP_LABEL: group}, set_values=typo)
    )
    await _check(
        made,
        name,
        group,
        "RecipeInvalid",
        f"values.schema.json: SpecialResource {name}: spec.set.greetin: unknown key",
    )
    await _others_still_served(made, group, recipe_dir)
