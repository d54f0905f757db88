"""No single template operation can escape the render budget (sro.render.sandbox, budget).

Each expression below would allocate gigabytes or loop for minutes if it ran; each must
fail as a TemplateError at once, before building its result, and an ordinary use of the
same operation must still work.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from sro.errors import Location, TemplateError
from sro.render import templates

pytestmark = pytest.mark.unit

AT = Location(file="r/s/doc.yaml", line=1)


def render(text: str, values: dict[str, Any] | None = None, *, limits: templates.Limits | None = None) -> str:
    compiled = templates.compile_document(text, location=AT)
    return compiled.render(values or {}, budget=templates.Budget(limits or templates.Limits()))


BOMBS = {
    "center": '{{ "x"|center(2000000000) }}',
    "indent": '{{ ("a\\n" * 1000)|indent(10**7) }}',
    "format filter": '{{ "%999999999s"|format("") }}',
    "str.format": '{{ "{:>999999999}".format("") }}',
    "percent": '{{ "%999999999d" % 1 }}',
    "ljust method": '{{ "x".ljust(10**9) }}',
    "zfill": '{{ "1".zfill(10**9) }}',
    "replace": '{{ ("a" * 1000)|replace("a", "b" * 1000000) }}',
    "replace method": '{{ ("a" * 1000).replace("a", "b" * 1000000) }}',
    "join": '{{ ("x" * 1000000)|join("y" * 1000) }}',
    "concat tilde": '{% set a = "x" * 4000000 %}{{ a ~ a ~ a }}',
    "concat plus": '{% set a = "x" * 4000000 %}{{ a + a + a }}',
    "list repeat": "{{ [1] * 10**9 }}",
    "big integer": "{{ 2 ** 1000 * 2 ** 1000 * (10 ** 1000) ** 20 }}",
    "exponent": "{{ 2 ** 100000 }}",
    "wordwrap": '{{ ("a " * 3000000)|wordwrap(1, wrapstring="-" * 10) }}',
    "batch": "{{ [1]|batch(10**9)|list }}",
    "nested loops": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "macro output": '{% macro m() %}{{ "x" * 8000000 }}{% endmacro %}{{ m() ~ m() }}',
}


@pytest.mark.parametrize("expression", BOMBS.values(), ids=BOMBS.keys())
def test_an_operation_that_would_build_too_much_fails_before_it_runs(expression: str) -> None:
    started = time.monotonic()
    with pytest.raises(TemplateError):
        render(f"a: {expression}\n")
    assert time.monotonic() - started < 3.0


@pytest.mark.parametrize(
    "expression",
    [
        '{{ "".lipsum }}{{ lipsum(10**7) }}',
        '{{ "<a>"|striptags }}',
        '{{ "x"|urlize }}',
        "{{ ''.translate({}) }}",
    ],
)
def test_operations_that_have_no_place_in_a_manifest_are_refused(expression: str) -> None:
    with pytest.raises(TemplateError):
        render(f"a: {expression}\n")


def test_the_loop_bound_counts_every_loop_of_the_render() -> None:
    with pytest.raises(TemplateError, match="loops ran more than 100 times"):
        render(
            "{% for i in range(60) %}{% endfor %}{% for i in range(60) %}{% endfor %}",
            limits=templates.Limits(loop_items=100),
        )


def test_scratch_memory_is_bounded_across_operations() -> None:
    limits = templates.Limits(work_bytes=1000)
    with pytest.raises(TemplateError, match="more than 1000 bytes of strings and lists"):
        render('{% for i in range(10) %}{% set s = "x" * 200 %}{% endfor %}', limits=limits)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('{{ "ab"|center(6) }}', "  ab  "),
        ('{{ "a\\nb"|indent(2) }}', "a\n  b"),
        ('{{ "%05d"|format(42) }}', "00042"),
        ('{{ "{}-{}".format(1, 2) }}', "1-2"),
        ('{{ ["a", "b"]|join(",") }}', "a,b"),
        ('{{ "x" ~ 1 ~ "y" }}', "x1y"),
        ('{{ "ab" * 2 }}', "abab"),
        ("{{ 2 ** 10 }}", "1024"),
        ('{{ "a-b"|replace("-", "--") }}', "a--b"),
        ("{{ [1, 2, 3]|sum }}", "6"),
        ("{% for i in range(3) %}{{ i }}{% endfor %}", "012"),
    ],
)
def test_ordinary_uses_still_work(expression: str, expected: str) -> None:
    assert render(expression) == expected


@pytest.mark.parametrize(
    "expression",
    ['{{ "{0:>999999999}".format(1) }}', '{{ "{a:>999999999}".format_map({"a": 1}) }}'],
)
def test_str_format_is_sized_before_it_runs_though_jinja_wraps_it(expression: str) -> None:
    with pytest.raises(TemplateError, match=r"format(_map)? would build \d{10} bytes, more than"):
        render(f"a: {expression}\n")
