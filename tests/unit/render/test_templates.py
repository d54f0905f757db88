"""Rendering documents with Jinja2 in its sandbox (sro.render.templates, sro.render.engine).

Covers line numbers of undefined values and sandbox violations mapped into the file,
the time and output limits, rendered-YAML errors quoting the rendered line, and the
shape every rendered document must have.
"""

from __future__ import annotations

from typing import Any

import pytest

from sro.errors import Location, RecipeInvalid, TemplateError
from sro.render import engine, templates
from sro.render import recipe as recipe_

pytestmark = pytest.mark.unit

AT = Location(file="r/s/doc.yaml", line=10)


def render(text: str, values: dict[str, Any] | None = None, *, limits: templates.Limits | None = None) -> str:
    compiled = templates.compile_document(text, location=AT)
    return compiled.render(values or {}, budget=templates.Budget(limits or templates.Limits()))


def test_values_render_and_set_text_is_never_rendered_again() -> None:
    assert render("a: {{ set.x }}\n", {"set": {"x": "{{ 7 * 6 }}"}}) == "a: {{ 7 * 6 }}\n"


def test_an_undefined_value_is_an_error_at_its_line_in_the_file() -> None:
    with pytest.raises(TemplateError) as caught:
        render("a: 1\nb: 2\nc: {{ set.missing }}\n", {"set": {}})
    assert str(caught.value) == "r/s/doc.yaml:12: undefined value: 'dict object' has no attribute 'missing'"


def test_an_undefined_value_inside_a_loop_points_at_the_loop_body() -> None:
    with pytest.raises(TemplateError) as caught:
        render("a:\n{% for x in items %}\n  - {{ x.name }}\n{% endfor %}\n", {"items": [{}]})
    assert caught.value.location == Location(file="r/s/doc.yaml", line=12)


def test_a_syntax_error_is_reported_at_its_line() -> None:
    with pytest.raises(TemplateError) as caught:
        templates.compile_document("a: 1\n{% if x %}\nb: 2\n", location=AT)
    assert caught.value.location is not None and caught.value.location.line >= 11
    assert "template syntax error" in str(caught.value)


def test_the_sandbox_refuses_python_internals() -> None:
    with pytest.raises(TemplateError, match="not allowed in the sandbox") as caught:
        render("a: 1\nb: {{ x.__class__.__mro__ }}\n", {"x": 1})
    assert caught.value.location == Location(file="r/s/doc.yaml", line=11)


def test_a_render_over_the_time_limit_is_a_template_error() -> None:
    text = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    with pytest.raises(TemplateError, match=r"longer than 0\.2s"):
        render(text, limits=templates.Limits(seconds=0.2, loop_items=10**12))


def test_a_render_over_the_output_limit_is_a_template_error() -> None:
    with pytest.raises(TemplateError, match="exceeds 1000 bytes"):
        render("{% for i in range(1000) %}xxxxxxxxxx{% endfor %}", limits=templates.Limits(output_bytes=1000))


def test_huge_repetitions_and_exponents_are_refused_before_they_run() -> None:
    with pytest.raises(TemplateError, match="repetition"):
        render("{{ 'x' * 1000000000 }}")
    with pytest.raises(TemplateError, match="exponent"):
        render("{{ 2 ** 100000 }}")
    assert render("{{ 'ab' * 2 }} {{ 2 ** 10 }}") == "abab 1024"


def test_the_budget_is_shared_by_every_document_of_a_render() -> None:
    budget = templates.Budget(templates.Limits(output_bytes=15))
    doc = templates.compile_document("0123456789", location=AT)
    assert doc.render({}, budget=budget) == "0123456789"
    with pytest.raises(TemplateError, match="exceeds 15 bytes"):
        doc.render({}, budget=budget)


def document(text: str) -> recipe_.Document:
    split = recipe_.split_documents(text, file="r/s/doc.yaml")[-1]
    return recipe_.Document(
        location=split.location,
        index=split.index,
        text=split.text,
        kernel_affine=False,
        compiled=templates.compile_document(split.text, location=split.location),
    )


def render_doc(text: str, values: dict[str, Any] | None = None) -> dict[str, Any] | None:
    return engine.render_one(document(text), values or {}, budget=templates.Budget(templates.Limits()))


def test_rendered_yaml_errors_name_the_document_and_quote_the_rendered_line() -> None:
    text = "a: 1\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ name }}: y\n"
    with pytest.raises(RecipeInvalid) as caught:
        render_doc(text, {"name": "x"})
    assert str(caught.value) == (
        "r/s/doc.yaml:3: document 2: rendered YAML is invalid at rendered line 4 ('  name: x: y'): "
        "mapping values are not allowed here"
    )


def test_duplicate_keys_in_rendered_output_are_refused() -> None:
    with pytest.raises(RecipeInvalid, match="duplicate key 'kind'"):
        render_doc("apiVersion: v1\nkind: A\nkind: B\nmetadata: {name: x}\n")


def test_a_document_that_renders_to_nothing_is_none() -> None:
    assert render_doc("{% if false %}\napiVersion: v1\n{% endif %}\n# only a comment\n") is None


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("- a\n- b\n", 1, "must render to one Kubernetes object"),
        ("kind: ConfigMap\nmetadata: {name: x}\n", 1, "object has no apiVersion"),
        ("apiVersion: v1\nmetadata: {name: x}\n", 1, "object has no kind"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", 3, "ConfigMap has no metadata.name"),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, annotations: {sro.dev/wait: true}}\n",
            3,
            'metadata.annotations must map keys to strings (quote "true")',
        ),
    ],
)
def test_every_rendered_document_must_be_a_named_kubernetes_object(
    text: str, line: int, message: str
) -> None:
    with pytest.raises(RecipeInvalid) as caught:
        render_doc(text)
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"r/s/doc.yaml:{line}: document 1: ")


def test_a_template_cannot_change_the_values_other_documents_see() -> None:
    values = {"set": {"items": [1]}}
    with pytest.raises(TemplateError, match="not allowed in the sandbox"):
        render("a: {{ set['items'].append(2) }}\n", values)
    assert values["set"]["items"] == [1]


def test_endless_recursion_is_a_template_error_not_a_crash() -> None:
    with pytest.raises(TemplateError, match="recursion too deep"):
        render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}")


@pytest.mark.parametrize("closing", [5000, 4999])
def test_rendered_yaml_nested_absurdly_deep_is_refused_not_a_crash(closing: int) -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: " + "[" * 5000 + "]" * closing + "\n"
    with pytest.raises(RecipeInvalid, match="rendered YAML is invalid"):
        render_doc(text)


def test_a_value_of_brackets_is_a_string_not_nesting() -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {k: {{ deep }}}\n"
    body = render_doc(text, {"deep": "[" * 5000 + "]" * 4999})
    assert body is not None and body["data"] == {"k": "[" * 5000 + "]" * 4999}
