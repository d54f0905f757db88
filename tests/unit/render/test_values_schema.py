"""A recipe's ``values.schema.json`` (sro.render.schema).

Covers what a schema reports (unknown keys, wrong types, patterns, repeated items, with
the path of each), what a schema may not contain (invalid JSON, duplicate keys, deep
nesting, lookahead patterns, references outside the file, unbounded keywords), the
bounds on hostile schemas and values. The check in the render is
tests/unit/hooks/test_render_values_schema.py; the operator's, tests/e2e/test_bad_input.py.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from sro import errors
from sro.render import recipe as recipe_
from sro.render import schema

pytestmark = pytest.mark.unit

DIALECT = "https://json-schema.org/draft/2020-12/schema"

STRICT = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "driverVersion": {"type": "string"},
        "devices": {"type": "array", "uniqueItems": True, "items": {"type": "string", "pattern": "^[a-z]+$"}},
        "driver": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"replicas": {"type": "integer"}},
        },
    },
}


def _load(document: Any) -> schema.ValuesSchema:
    return schema.load(json.dumps(document), file="r/values.schema.json")


def _paths(document: Any, values: dict[str, Any]) -> dict[str, str]:
    return {v.dotted: v.message for v in _load(document).violations(values)}


def test_values_that_satisfy_the_schema_have_no_violations() -> None:
    assert _paths(STRICT, {"driverVersion": "550", "devices": ["a", "b"], "driver": {"replicas": 2}}) == {}


def test_unknown_keys_and_wrong_types_are_reported_with_their_paths() -> None:
    found = _paths(STRICT, {"driverImag": "x", "driverVersion": 550, "driver": {"replicas": 1.5, "extra": 1}})
    assert set(found) == {"driverImag", "driverVersion", "driver.replicas", "driver.extra"}
    assert "unknown key" in found["driverImag"]
    assert "not of type 'string'" in found["driverVersion"]


def test_patterns_and_repeated_items_are_reported_at_the_item() -> None:
    found = _paths(STRICT, {"devices": ["a", "a", "B1"]})
    assert set(found) == {"devices", "devices[2]"}
    assert "repeats" in found["devices"]


def test_one_and_one_point_zero_repeat_but_true_and_one_do_not() -> None:
    unique = {"type": "array", "uniqueItems": True}
    assert _load(unique).violations([1, 1.0])
    assert not _load(unique).violations([True, 1, {"a": 1}, {"a": True}])
    assert _load(unique).violations([{"a": 1, "b": 2}, {"b": 2, "a": 1}])


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{\n  "type": }', "not valid JSON"),
        ('{"type": "object", "type": "array"}', "duplicate key 'type'"),
        ("[1]", "must be a JSON object"),
        ('{"type": "nope"}', "not a valid JSON Schema at type"),
        ('{"properties": {"a": {"pattern": "(?=x)"}}}', "lookahead"),
        ('{"$ref": "https://example.com/s.json"}', "points outside the file"),
        ('{"unevaluatedProperties": false}', "unevaluatedProperties is not supported"),
        (
            '{"properties": {"a": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}}',
            "only at the top",
        ),
        (
            '{"properties": {' + ",".join(f'"k{i}": {{}}' for i in range(6000)) + "}}",
            "more than 5000 JSON values",
        ),
        ('{"a": ' + "[" * 100 + "]" * 100 + "}", "nested deeper than 64 levels"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
        ('{"x-stash": {"$schema": "' + DIALECT + '"}, "$ref": "#/x-stash"}', "only at the top"),
        ('{"x-stash": {"pattern": "(?!a)"}, "$ref": "#/x-stash"}', "negative lookahead"),
        ('{"$ref": "#/$defs/nowhere"}', "points at nothing in the file"),
        ('{"properties": {"a": {"$id": "https://example.com/a"}}}', "$id is allowed only at the top"),
    ],
)
def test_a_schema_that_cannot_be_used_is_recipe_invalid_naming_the_file(text: str, why: str) -> None:
    with pytest.raises(errors.RecipeInvalid) as raised:
        schema.load(text, file="r/values.schema.json")
    assert str(raised.value).startswith("r/values.schema.json")
    assert why in str(raised.value)


def test_a_json_syntax_error_names_its_line() -> None:
    with pytest.raises(errors.RecipeInvalid) as raised:
        schema.load('{\n  "type": "object",\n  oops\n}', file="f.json")
    assert str(raised.value).startswith("f.json:3:")


def test_a_backtracking_pattern_on_a_long_value_is_matched_in_linear_time() -> None:
    started = time.monotonic()
    found = _load({"items": {"pattern": "^(a+)+$"}}).violations(["a" * 200_000 + "b"])
    assert [v.dotted for v in found] == ["[0]"]
    assert time.monotonic() - started < 1


def test_a_schema_naming_its_dialect_is_still_matched_in_linear_time_through_a_reference() -> None:
    dialect = "https://json-schema.org/draft/2020-12/schema"
    document = {
        "$schema": dialect,
        "anyOf": [{"type": "integer"}, {"items": {"$ref": "#"}, "pattern": "^(a+)+$"}],
    }
    started = time.monotonic()
    assert _load(document).violations(["a" * 100_000 + "b"])
    assert time.monotonic() - started < 1


def test_a_schema_that_refers_to_itself_without_end_is_stopped() -> None:
    loop = {"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}
    started = time.monotonic()
    (found,) = _load(loop).violations({"x": 1})
    assert found.path == ()
    assert time.monotonic() - started < schema.SECONDS + 1


def test_many_violations_are_cut_at_the_reported_bound_and_unique_items_is_not_quadratic() -> None:
    started = time.monotonic()
    found = _load({"type": "array", "uniqueItems": True, "items": {"type": "integer"}}).violations(
        [str(i) for i in range(200_000)]
    )
    assert len(found) == schema.MAX_REPORTED
    assert time.monotonic() - started < 2


def test_a_configmap_recipe_may_carry_its_schema() -> None:
    files = recipe_.files_from_configmap(
        {"recipe.yaml": "states: [{name: s}]\n", "values.schema.json": "{}", "s__cm.yaml": "x"}, origin="cm"
    )
    assert set(files) == {"recipe.yaml", "values.schema.json", "s/cm.yaml"}
