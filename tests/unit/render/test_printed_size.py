"""Values that print to far more than they hold are refused before they are printed."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sro.errors import Location, TemplateError
from sro.render import printed, templates

pytestmark = pytest.mark.unit

SHARED = "[[1] * 100000] * 100000"  # 800 KB of pointers, 30 GB of text
DOUBLING = "{% set a = [1, 1] %}" + "{% set a = [a, a] %}" * 40
PRINT_BOMBS = {
    "printed": f"{{{{ {SHARED} }}}}",
    "string filter": f"{{{{ ({SHARED}) | string }}}}",
    "tojson": f"{{{{ ({SHARED}) | tojson }}}}",
    "join": f'{{{{ ({SHARED}) | join(",") }}}}',
    "map": f"{{{{ ({SHARED}) | map('string') | list }}}}",
    "tilde": f'{{{{ ({SHARED}) ~ "" }}}}',
    "str.format": f'{{{{ "{{}}".format({SHARED}) }}}}',
    "percent": f'{{{{ "%s" % ({SHARED},) }}}}',
    "dict items": f'{{{{ {{"a": {SHARED}}}.items() }}}}',
    "namespace": f"{{% set ns = namespace(a={SHARED}) %}}{{{{ ns }}}}",
    "doubling literals": DOUBLING + "{{ a }}",
    "deep nesting": "{% set a = 1 %}" + "{% set a = [a] %}" * 150 + "{{ a }}",
}


def cpu() -> float:
    """This thread's CPU seconds: the work a refusal took, whatever else the machine runs
    (the render is synchronous, on this thread; wall time grows with a busy machine)."""
    return time.thread_time()


def render(text: str) -> str:
    compiled = templates.compile_document(f"a: {text}\n", location=Location(file="r/s/d.yaml", line=1))
    return compiled.render({}, budget=templates.Budget(templates.Limits()))


@pytest.mark.parametrize("template", PRINT_BOMBS.values(), ids=PRINT_BOMBS.keys())
def test_a_value_printing_to_gigabytes_is_refused_before_it_prints(template: str) -> None:
    started = cpu()
    with pytest.raises(TemplateError, match=r"would build|prints to more than|nests deeper"):
        render(template)
    assert cpu() - started < 2.0


def test_values_of_ordinary_size_still_print() -> None:
    assert render('{{ [1, "two", {"k": none}] | tojson }}') == 'a: [1, "two", {"k": null}]\n'
    assert "[[1, 1], [1, 1]]" in render("{% set a = [1, 1] %}{{ [a, a] }}")


values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(), st.binary(max_size=8)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner),
        st.dictionaries(st.text(max_size=4), inner, max_size=4),
        st.frozensets(st.integers(), max_size=3),
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(value=values)
def test_the_size_is_never_below_the_printed_length(value: Any) -> None:
    assert printed.size(value, limit=10**9) >= len(str(value))


BUILT_BOMBS = {
    "compare doubling lists": "{% set a = [1, 1] %}"
    + "{% set a = [a, a] %}" * 40
    + "{% set b = [1, 1] %}"
    + "{% set b = [b, b] %}" * 40
    + "{{ a == b }}",
    "hash doubling tuples": "{% set a = (1, 1) %}" + "{% set a = (a, a) %}" * 40 + "{{ {a: 1} | length }}",
    "dict literal": "{% set a = 'x' * 3000000 %}{% set d = {'x': a, 'y': a} %}{{ {'p': d, 'q': d} }}",
    "fromkeys": "{{ {}.fromkeys(range(100000), [1] * 100000) | length }}",
    "repetition of a list": "{{ ([[1] * 100000] * 100000) | length }}",
    "filter result": '{{ [1] | batch(9, fill_with="x" * 1100000) | list | length }}',
}


@pytest.mark.parametrize("template", BUILT_BOMBS.values(), ids=BUILT_BOMBS.keys())
def test_no_template_builds_a_value_printing_past_the_bound(template: str) -> None:
    started = cpu()
    with pytest.raises(TemplateError, match=r"prints to more than 8388608 bytes"):
        render(template)
    assert cpu() - started < 3.0
