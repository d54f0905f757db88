"""The strict YAML loader against documents built to exhaust it.

Covers: a billion-laughs alias bomb is refused quickly (its expanded size is measured once
per shared value); a merge-key (``<<``) bomb is refused before any flattening; block and
flow nesting thousands deep is ``RecipeInvalid`` in both parsers, never ``RecursionError``,
and flow brackets past libyaml's own bound get the same refusal without the pure-Python
parser (quadratic in open brackets);
a recursive alias is refused; ordinary aliases within the bounds still load.
"""

from __future__ import annotations

import time

import pytest

from sro import errors
from sro.render import yamlstrict

pytestmark = pytest.mark.unit


def laughs(levels: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        refs = ",".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "\n".join(lines) + "\n"


def merge_bomb(levels: int) -> str:
    lines = ["m0: &m0 {k0: v}"]
    for i in range(1, levels):
        lines.append(f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], k{i}: v}}")
    return "\n".join(lines) + "\n"


def timed(text: str) -> tuple[type[BaseException] | None, str, float]:
    start = time.perf_counter()
    try:
        yamlstrict.load(text, file="bomb.yaml")
    except errors.RecipeInvalid as exc:
        return type(exc), str(exc), time.perf_counter() - start
    return None, "", time.perf_counter() - start


def test_a_billion_laughs_is_refused_in_well_under_a_second() -> None:
    kind, message, seconds = timed(laughs(12))
    assert kind is errors.RecipeInvalid and "once its aliases are expanded" in message
    assert message.startswith("bomb.yaml:") and seconds < 1.0


def test_merge_keys_are_refused_before_any_flattening() -> None:
    kind, message, seconds = timed(merge_bomb(40))
    assert kind is errors.RecipeInvalid and "merge keys (<<) are not supported" in message
    assert message.startswith("bomb.yaml:2:") and seconds < 1.0


@pytest.mark.parametrize(
    "text",
    [
        "".join(f"{'  ' * i}k{i}:\n" for i in range(2000)) + "  " * 2000 + "end\n",
        "[" * 5000 + "]" * 5000 + "\n",
        "a: " + "{b: " * 3000 + "1" + "}" * 3000 + "\n",
    ],
    ids=["block", "flow-list", "flow-map"],
)
def test_nesting_thousands_deep_is_a_recipe_error_never_a_recursion_error(text: str) -> None:
    kind, message, seconds = timed(text)
    assert kind is errors.RecipeInvalid, message
    assert "nested deeper than" in message or "invalid YAML" in message
    assert seconds < 2.0


def test_flow_brackets_past_libyamls_bound_are_refused_without_the_slow_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = "a: 1\nb: 2\ndeep: " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(errors.RecipeInvalid) as slow:  # what the pure-Python parser says
        monkeypatch.setattr(yamlstrict, "_FastLoader", None)
        yamlstrict.load(text, file="deep.yaml")
    monkeypatch.undo()
    assert yamlstrict._FastLoader is not None  # the wheel ships libyaml: the case this is about
    loaders: list[type] = []
    run = yamlstrict._run

    def counted(loader_class: type, *args: object, **kwargs: object) -> object:
        loaders.append(loader_class)
        return run(loader_class, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(yamlstrict, "_run", counted)
    with pytest.raises(errors.RecipeInvalid) as fast:
        yamlstrict.load(text, file="deep.yaml")
    assert loaders == [yamlstrict._FastLoader]
    assert str(fast.value) == str(slow.value) == "deep.yaml:3: invalid YAML: nested deeper than 100 levels"


def test_a_recursive_alias_is_refused() -> None:
    kind, message, _ = timed("a: &a [*a]\n")
    assert kind is errors.RecipeInvalid and "contains itself" in message


def test_ordinary_aliases_within_the_bounds_still_load() -> None:
    value = yamlstrict.load("base: &b {cpu: 1}\nx: {limits: *b, requests: *b}\n", file="ok.yaml")
    assert value["x"]["limits"] == {"cpu": 1} and value["x"]["requests"] is value["base"]
