"""Compiling a recipe's templates is bounded too: tag counts, and nesting that would break
Jinja's parser or Python's compiler is a TemplateError, never a crash."""

from __future__ import annotations

import time

import pytest

from sro.errors import Location, RecipeInvalid, TemplateError
from sro.render import problems as problems_
from sro.render import recipe as recipe_
from sro.render import templates

pytestmark = pytest.mark.unit

AT = Location(file="r/s/d.yaml", line=3)


def test_a_document_of_too_many_tags_is_refused_before_it_is_compiled() -> None:
    started = time.monotonic()
    with pytest.raises(TemplateError, match=f"more than {templates.MAX_TAGS} template tags") as raised:
        templates.compile_document("a: " + "{{ 1 }}" * 100_000, location=AT)
    assert raised.value.location == AT
    assert time.monotonic() - started < 1.0


def test_nesting_that_breaks_the_parser_is_a_template_error_at_the_document() -> None:
    deep = "a: {{ " + "(" * 5000 + "1" + ")" * 5000 + " }}"
    with pytest.raises(TemplateError, match="nests too deeply to compile"):
        templates.compile_document(deep, location=AT)


def test_a_recipe_of_too_many_tags_in_all_is_refused_naming_the_count() -> None:
    tags = "{{ 1 }}" * 4000
    files = {"recipe.yaml": "states:\n  - name: s\n"}
    files.update(
        {
            f"s/d{i}.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\ndata:\n  x: {tags}\n"
            for i in range(6)
        }
    )
    found = problems_.Problems()
    assert (
        recipe_.collect("many", files, source=recipe_.Source.DIRECTORY, origin="many", problems=found) is None
    )
    (error,) = found.errors
    assert isinstance(error, RecipeInvalid)
    assert (
        str(error)
        == f"many: more than {templates.MAX_RECIPE_TAGS} template tags in the recipe's documents (24000)"
    )


def test_an_error_met_while_jinja_folds_constants_is_a_template_error() -> None:
    with pytest.raises(TemplateError, match="undefined value: 'dict object' has no attribute 'x'") as raised:
        templates.compile_document("a: {% set b = ({'k': (1 ~ ({'k': 1} | attr('x')))} != 1) %}", location=AT)
    assert raised.value.location == AT
