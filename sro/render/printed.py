"""How long a value's text would be, found without building the text.

A template can build, in a few hundred bytes of pointers, a list that prints to
gigabytes: ``[[1] * 100000] * 100000`` holds one inner list a hundred thousand times, and
``{% set a = [b, b] %}{% set b = [a, a] %}``... doubles with every line. Sizing such a
value by its memory (``budget.size_of``) says nothing of its text, and ``str()`` on it
runs in C, holding the interpreter for minutes while it allocates without bound. So
wherever the sandbox would turn a value other than a string into text (printing it,
``~``, a filter, a format argument), it first asks ``size`` how long that text would be,
walking the value once (each shared part measured once), stopping as soon as the answer
passes the limit, and counting its steps against the render's clock.
"""

from __future__ import annotations

from collections.abc import ItemsView, KeysView, Mapping, ValuesView
from typing import Any

import jinja2.utils

from sro.render import budget as budget_

MAX_DEPTH = 100
"""Deepest nesting measured; deeper is refused (Python would fail printing it anyway)."""
_CLOCK_EVERY = 4096
CONTAINERS = (list, tuple, set, frozenset, dict, KeysView, ValuesView, ItemsView, jinja2.utils.Namespace)
"""The types whose text is the text of what they hold, and so can grow without bound."""


class _Walk:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.known: dict[int, int] = {}
        self.steps = 0

    def size(self, value: Any, depth: int) -> int:
        if isinstance(value, str):
            if depth == 0:
                return len(value)
            if value.isascii() and value.isprintable():
                return len(value) + 2 + value.count("\\") + value.count("'")
            return len(repr(value))
        if isinstance(value, bytes | bytearray):
            return 4 * len(value) + 14
        if value is None or isinstance(value, bool | int | float | complex):
            return len(repr(value))
        if not isinstance(value, CONTAINERS):
            return len(str(value))
        known = self.known.get(id(value))
        if known is not None:
            return known
        if depth >= MAX_DEPTH:
            raise budget_.OverBudget(f"a value nests deeper than {MAX_DEPTH} levels")
        total = 16  # brackets, a type's name
        if isinstance(value, jinja2.utils.Namespace):
            items: Any = object.__getattribute__(value, "_Namespace__attrs").items()
        else:
            items = value.items() if isinstance(value, Mapping) else value
        for item in items:
            self.steps += 1
            if self.steps % _CLOCK_EVERY == 0:
                budget_.current().check_time()
            if isinstance(value, Mapping | ItemsView | jinja2.utils.Namespace):
                key, inner = item
                total += self.size(key, depth + 1) + self.size(inner, depth + 1) + 4
            else:
                total += self.size(item, depth + 1) + 2
            if total > self.limit:
                return total
        self.known[id(value)] = total
        return total


def size(value: Any, *, limit: int) -> int:
    """At least the length of ``str(value)``, exact for strings; once past ``limit``, some
    number above it (the walk stops there)."""
    if isinstance(value, str):
        return len(value)
    return _Walk(limit).size(value, 0)


def checked_text(value: Any, *, what: str) -> str:
    """``str(value)``, once the render's budget allows what it would build."""
    if isinstance(value, str):
        return value
    budget = budget_.current()
    if isinstance(value, CONTAINERS):
        budget.produce(size(value, limit=budget.limits.output_bytes), what=what)
    return str(value)


def check_arguments(values: tuple[Any, ...], *, what: str) -> None:
    """Refuse any container among ``values`` that would print to more than one value may."""
    budget = budget_.current()
    for value in values:
        if isinstance(value, CONTAINERS):
            found = size(value, limit=budget.limits.output_bytes)
            if found > budget.limits.output_bytes:
                raise budget_.OverBudget(
                    f"{what} was given a value that prints to more than {budget.limits.output_bytes} bytes"
                )


def bounded(value: Any, *, what: str) -> Any:
    """``value``, if it is no container or prints within one value's bound."""
    if isinstance(value, CONTAINERS):
        limit = budget_.current().limits.output_bytes
        if size(value, limit=limit) > limit:
            raise budget_.OverBudget(f"{what} would build a value that prints to more than {limit} bytes")
    return value
