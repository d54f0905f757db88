"""The built-in recipes' ``values.schema.json`` (assets/*/values.schema.json).

Covers that each built-in recipe ships a schema, that its defaults satisfy it, that
every ``set.<path>`` its templates read is described there (so the schema never refuses
a value a template needs), and that it refuses a misspelt key and a wrong type.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from sro.render import recipe as recipe_
from sro.render import schema

pytestmark = pytest.mark.unit

ASSETS = Path(__file__).resolve().parents[3] / "assets"
BUILT_IN = sorted(p.parent.name for p in ASSETS.glob(f"*/{recipe_.RECIPE_FILE}"))
_READ = re.compile(r"\bset((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


def _recipe(name: str) -> recipe_.Recipe:
    return recipe_.load_directory(ASSETS / name, source=recipe_.Source.BUILT_IN)


def _resolve(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with its ``$ref`` (within the file) followed."""
    while "$ref" in node:
        target: Any = document
        for part in str(node["$ref"]).removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _described(document: dict[str, Any], path: list[str]) -> bool:
    node = _resolve(document, document)
    for part in path:
        child = (node.get("properties") or {}).get(part)
        if child is None:
            return False
        node = _resolve(document, child)
    return True


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_value_a_built_in_template_reads_is_in_its_schema(name: str) -> None:
    recipe = _recipe(name)
    assert recipe.values_schema is not None, f"{name} ships no {schema.SCHEMA_FILE}"
    document = dict(recipe.values_schema.document)
    read = {m.group(1)[1:] for s in recipe.states for d in s.documents for m in _READ.finditer(d.text)}
    assert read
    missing = sorted(p for p in read if not _described(document, p.split(".")))
    assert missing == []


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_built_in_recipe_s_defaults_satisfy_its_schema(name: str) -> None:
    recipe = _recipe(name)
    assert recipe.values_schema is not None
    assert recipe.values_schema.violations(dict(recipe.defaults)) == []


def test_the_nvidia_schema_refuses_a_misspelt_key_and_a_wrong_type() -> None:
    recipe = _recipe("nvidia-gpu")
    assert recipe.values_schema is not None
    exporter = {**recipe.defaults["dcgmExporter"], "port": "80"}
    values = {**recipe.defaults, "driverImag": "x", "dcgmExporter": exporter}
    found = {v.dotted for v in recipe.values_schema.violations(values)}
    assert found == {"driverImag", "dcgmExporter.port"}
