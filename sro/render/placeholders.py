"""Template values are data: they take their place in the parsed YAML, never in its text.

Pasting a value into YAML text lets the value's content decide the structure: a string
holding a quote, a newline, ``]``, ``&``/``*`` or ``---`` could add keys, objects or an
alias bomb to a manifest. So every ``{{ expression }}`` renders to a placeholder token
(``finalize``), the YAML is parsed with the tokens standing in for the values, and only
then each token is replaced by its value inside the parsed scalar (``Table.scalar``):

* a plain (unquoted) scalar that is exactly one token becomes the value itself, typed:
  a number stays a number, a mapping or list stays one, and a string stays that string
  whatever it contains (``| tojson`` gives the value the JSON stands for);
* a token inside a longer scalar, or in a quoted or block scalar, becomes the value's
  text as Jinja prints it, so ``image: "{{ repo }}:{{ tag }}"`` is unchanged.

Only the template's literal text is ever read as YAML. Tokens carry a random number per
render, so no value can forge one. Text a template captures (a macro's output, a
``{% set %}`` block) holds tokens of its own, which are expanded when it is used.
"""

from __future__ import annotations

import contextvars
import json
import re
import secrets
from collections.abc import Mapping
from typing import Any

import jinja2

from sro.render import budget as budget_
from sro.render import printed

OPEN = "\ue000"
"""First character of a token (Unicode private use: never in real text, and plain in YAML)."""
CLOSE = "\ue001"
"""Last character of a token."""
MAX_DEPTH = 100
"""Deepest value a template may place (as ``yamlstrict.MAX_DEPTH``)."""


class JsonText(str):
    """The text ``| tojson`` produced: in a whole plain scalar it stands for its value."""

    __slots__ = ()


class Table:
    """The values of one rendered document, by token."""

    def __init__(self) -> None:
        self.nonce = f"{secrets.randbelow(10**9):09d}"
        self.marker = OPEN
        self._values: list[Any] = []
        self._lengths: list[int] = []
        self._texts: dict[int, str] = {}
        self._pattern = re.compile(f"{OPEN}{self.nonce}\\.([0-9]+){CLOSE}")

    def token(self, value: Any) -> str:
        """Register ``value``; the token that stands for it in the rendered text."""
        index = len(self._values)
        if isinstance(value, str):
            length = len(value) + sum(
                self._lengths[int(m[1])] - len(m[0]) for m in self._pattern.finditer(value)
            )
        else:
            text = printed.checked_text(value, what="printing a value")
            self._texts[index] = text
            length = len(text)
        budget_.current().spend(length)
        self._values.append(value)
        self._lengths.append(length)
        return f"{OPEN}{self.nonce}.{index}{CLOSE}"

    def expand(self, text: str) -> str:
        """``text`` with every token replaced by the text of its value."""
        if OPEN not in text:
            return text
        return self._pattern.sub(lambda m: self._text(int(m[1])), text)

    def scalar(self, text: str, *, plain: bool) -> Any:
        """The value of a parsed YAML scalar whose text holds tokens."""
        if OPEN in self._pattern.sub("", text) or CLOSE in self._pattern.sub("", text):
            raise ValueError(
                "a value's placeholder was cut or changed (filter template text, not values: "
                "apply filters as {{ value | filter }})"
            )
        whole = self._pattern.fullmatch(text)
        if whole is not None and plain:
            return self._data(self._values[int(whole[1])], top=True)
        return self.expand(text)

    def _text(self, index: int) -> str:
        cached = self._texts.get(index)
        if cached is None:
            value = self._values[index]
            cached = self.expand(value if isinstance(value, str) else str(value))
            self._texts[index] = cached
        return cached

    def _data(self, value: Any, *, top: bool = False, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise ValueError(f"a value nests deeper than {MAX_DEPTH} levels")
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, JsonText) and top:
            try:
                return json.loads(value)
            except (ValueError, RecursionError):
                raise ValueError("a | tojson value is not JSON") from None
        if isinstance(value, str):
            return self.expand(value)
        if isinstance(value, Mapping):
            return {self._key(k): self._data(v, depth=depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._data(v, depth=depth + 1) for v in value]
        return self.expand(str(value))

    def _key(self, key: Any) -> Any:
        if key is None or isinstance(key, bool | int | float):
            return key
        return self.expand(key if isinstance(key, str) else str(key))


_active: contextvars.ContextVar[Table | None] = contextvars.ContextVar("sro_placeholders", default=None)


def activate(table: Table) -> contextvars.Token[Table | None]:
    return _active.set(table)


def deactivate(token: contextvars.Token[Table | None]) -> None:
    _active.reset(token)


@jinja2.pass_context
def finalize(context: jinja2.runtime.Context, value: Any) -> Any:
    """What ``{{ expression }}`` prints: a token for its value while a table is active."""
    del context  # taken so Jinja never calls this while compiling (no constant folding)
    if isinstance(value, jinja2.Undefined):
        str(value)  # StrictUndefined raises here, naming what is undefined
    table = _active.get()
    if table is None:
        return value
    return table.token(value)
