"""Values travel as JSON: a mapping key that is not a string is refused, with its path."""

from __future__ import annotations

import pytest

from sro.model import specialresource as srmodel
from sro.render import problems as problems_
from sro.render import recipe_yaml

pytestmark = pytest.mark.unit


def test_a_set_value_with_a_key_that_is_not_a_string_is_refused() -> None:
    body = {
        "apiVersion": srmodel.API_VERSION,
        "kind": srmodel.KIND,
        "metadata": {"name": "gpu"},
        "spec": {"set": {"a": [{"ok": 1}, {None: "x"}]}},
    }
    with pytest.raises(srmodel.SpecialResourceInvalid, match=r"spec\.set\.a\[1\]: key None must be a string"):
        srmodel.parse(body)
    assert srmodel.key_problem({"a": {"b": [1, {"c": None}]}}, at="spec.set") is None


def test_recipe_defaults_with_a_key_that_is_not_a_string_are_refused_at_their_line() -> None:
    found = problems_.Problems()
    text = "description: x\ndefaults:\n  images: {1: a}\nstates:\n  - name: s\n"
    header = recipe_yaml.Header.parse(text, file="r/recipe.yaml", problems=found)
    assert [str(e) for e in found.errors] == [
        "r/recipe.yaml:2: defaults.images: key 1 must be a string (quote it)"
    ]
    assert header.defaults == {}
