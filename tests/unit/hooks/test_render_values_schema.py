"""The values schema checked by ``render_desired`` (sro.hooks.pipeline), as run, render and lint use it.

Covers a SpecialResource whose merged ``set`` breaks the recipe's schema (refused,
naming it and the key), a recipe default that breaks it (named as the default), and
values that satisfy it or a recipe without one (rendered).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import make_node, make_recipe, make_sr, render

from sro import errors
from sro.render import recipe as recipe_

pytestmark = pytest.mark.unit

STRICT = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"driverVersion": {"type": "string"}},
}
DOC = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {v: '{{ set.driverVersion }}'}\n"
HEADER = "defaults: {driverVersion: '550'}\n"


def _recipe(document: Any) -> recipe_.Recipe:
    files = {
        "recipe.yaml": HEADER + "states:\n  - name: s\n",
        "s/cm.yaml": DOC,
        "values.schema.json": json.dumps(document),
    }
    return recipe_.load("demo", files, source=recipe_.Source.DIRECTORY, origin="demo")


def test_a_set_key_the_schema_does_not_know_is_values_invalid_naming_the_sr_and_the_key() -> None:
    with pytest.raises(errors.ValuesInvalid) as raised:
        render(make_sr(set={"driverImag": "x"}), _recipe(STRICT), [make_node("a")])
    assert raised.value.reason == "RecipeInvalid"
    assert raised.value.sr == "gpu" and raised.value.path == ("driverImag",)
    assert str(raised.value).startswith("demo/values.schema.json: SpecialResource gpu: spec.set.driverImag:")


def test_a_default_that_breaks_the_schema_is_named_as_the_recipe_s_default() -> None:
    numbers = {"type": "object", "properties": {"driverVersion": {"type": "integer"}}}
    with pytest.raises(errors.ValuesInvalid) as raised:
        render(make_sr(), _recipe(numbers), [make_node("a")])
    assert "set value driverVersion (a default of recipe demo)" in str(raised.value)


def test_values_that_satisfy_the_schema_render() -> None:
    result = render(make_sr(set={"driverVersion": "560"}), _recipe(STRICT), [make_node("a")])
    assert result.objects[0].body["data"] == {"v": "560"}


def test_a_recipe_without_a_schema_takes_any_values() -> None:
    recipe = make_recipe({"s": {"cm.yaml": DOC}}, header=HEADER)
    assert render(make_sr(set={"anything": [1]}), recipe, [make_node("a")]).objects
