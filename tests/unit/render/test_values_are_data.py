"""`set` values are data (sro.render.placeholders): no value changes a document's structure.

Each case renders a template that pastes a value the way real recipes do
(``containerPort: {{ set.port }}``, ``image: "{{ repo }}:{{ tag }}"``) and asserts the parsed
document holds exactly that value, whatever characters it contains, and nothing more.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sro.errors import Location
from sro.render import engine, templates
from sro.render import recipe as recipe_

pytestmark = pytest.mark.unit

HEAD = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"


def render_doc(text: str, values: dict[str, Any]) -> dict[str, Any]:
    split = recipe_.split_documents(text, file="r/s/doc.yaml")[-1]
    doc = recipe_.Document(
        location=split.location,
        index=split.index,
        text=split.text,
        kernel_affine=False,
        compiled=templates.compile_document(split.text, location=split.location),
    )
    body = engine.render_one(doc, values, budget=templates.Budget(templates.Limits()))
    assert body is not None
    return body


HOSTILE = [
    "a: b",
    "quote \" and ' both",
    "line one\nline two\n  indented: key",
    "]}, extra: [1",
    "&anchor [*anchor, *anchor]",
    "*alias",
    "---\napiVersion: v1\nkind: Secret",
    "!!binary aGVsbG8=",
    "# a comment",
    "- a list item",
    "{{ 7 * 6 }}",
    "",
    "null",
    "true",
    "12",
    "\ue000123.0\ue001",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_a_string_value_renders_as_that_string_in_a_plain_scalar(value: str) -> None:
    body = render_doc(HEAD + "data:\n  k: {{ set.v }}\n  other: kept\n", {"set": {"v": value}})
    assert body["data"] == {"k": value, "other": "kept"}


@pytest.mark.parametrize("value", HOSTILE)
def test_a_string_value_inside_quotes_and_beside_text_is_that_text(value: str) -> None:
    body = render_doc(HEAD + 'data:\n  k: "{{ set.v }}:tag"\n  p: pre-{{ set.v }}\n', {"set": {"v": value}})
    assert body["data"] == {"k": f"{value}:tag", "p": f"pre-{value}"}


@pytest.mark.parametrize("value", HOSTILE)
def test_a_string_value_as_a_key_is_one_key(value: str) -> None:
    body = render_doc(HEAD + "data:\n  {{ set.v }}: one\n", {"set": {"v": value}})
    assert body["data"] == {value: "one"}


def test_typed_values_keep_their_types() -> None:
    values = {"set": {"port": 9400, "ratio": 0.5, "enabled": True, "none": None, "m": {"a": [1, "b"]}}}
    template = HEAD + (
        "spec:\n  port: {{ set.port }}\n  ratio: {{ set.ratio }}\n  enabled: {{ set.enabled }}\n"
        "  none: {{ set.none }}\n  m: {{ set.m }}\n  j: {{ set.m | tojson }}\n"
    )
    body = render_doc(template, values)
    assert body["spec"] == {
        "port": 9400,
        "ratio": 0.5,
        "enabled": True,
        "none": None,
        "m": {"a": [1, "b"]},
        "j": {"a": [1, "b"]},
    }


def test_template_arithmetic_still_gives_numbers_and_text_still_joins() -> None:
    template = HEAD + 'spec:\n  n: {{ 40 + 2 }}\n  image: "{{ repo }}/{{ name }}:{{ tag }}"\n'
    body = render_doc(template, {"repo": "r.io", "name": "driver", "tag": "5.15.0"})
    assert body["spec"] == {"n": 42, "image": "r.io/driver:5.15.0"}


def test_a_value_in_a_block_scalar_is_its_text() -> None:
    value = "line: 1\n---\n- x"
    body = render_doc(HEAD + "data:\n  script: |\n    echo {{ set.v }}\n", {"set": {"v": value}})
    assert body["data"]["script"] == f"echo {value}\n"


def test_a_filter_block_cannot_read_values_as_yaml() -> None:
    with pytest.raises(Exception, match=r"filter %\} blocks are not allowed"):
        templates.compile_document(
            "{% filter upper %}a: {{ x }}{% endfilter %}\n", location=Location(file="f.yaml", line=1)
        )


def test_a_forged_token_in_a_value_is_just_text() -> None:
    forged = "\ue000000000000.0\ue001"
    body = render_doc(HEAD + "data:\n  k: {{ set.v }}\n", {"set": {"v": forged}})
    assert body["data"]["k"] == forged


def test_a_captured_value_cut_apart_is_still_one_text_value() -> None:
    template = HEAD + "{% set c %}{{ set.v }}{% endset %}data:\n  k: {{ c[:3] }}\n  n: {{ c | length > 0 }}\n"
    body = render_doc(template, {"set": {"v": "a: [b"}})
    assert set(body["data"]) == {"k", "n"}
    assert isinstance(body["data"]["k"], str) and body["data"]["n"] is True


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_string_value_renders_as_itself(value: str) -> None:
    body = render_doc(HEAD + "data:\n  a: {{ v }}\n  b: '{{ v }}'\n  c: x{{ v }}\n", {"v": value})
    assert body["data"] == {"a": value, "b": value, "c": "x" + value}
