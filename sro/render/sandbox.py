"""Jinja2's immutable sandbox, with every operation that can allocate or loop bounded.

The sandbox keeps templates away from Python internals, but not from allocating: one
filter call such as ``"x"|center(2000000000)``, ``"x"|indent(10**9)``, ``"%999999999s"|format("")``
or ``big ~ big`` builds its result before anything between calls could look at it. So
here every filter, string method and operator that can build a value larger than its
inputs is given the size of what it would build first, and asks the render's budget
(``budget.Budget.produce``): over a bound, it raises before allocating. Loops count
their turns, ``lipsum`` and the HTML-only filters are gone, ``sum`` adds numbers only,
and ``{% filter %}`` blocks are refused (their output would be read as YAML text,
outside the placeholders of ``sro.render.placeholders``).
"""

from __future__ import annotations

import functools
import json
import re
import string
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import jinja2
import jinja2.filters
import jinja2.nodes
import jinja2.sandbox

from sro.render import budget as budget_
from sro.render import codegen, placeholders, printed

MAX_INT_BITS = 16384
"""Largest integer an arithmetic operator may build. Error: ``an integer of more than
16384 bits is not allowed``."""
MAX_EXPONENT = 1024
"""Largest exponent of ``**``. Error: ``an exponent over 1024 is not allowed``."""
MAX_ITEMS = 100_000
"""Most pieces ``batch``, ``slice`` may cut a list into (as Jinja's own ``range`` bound).
Error: ``batch/slice into more than 100000 pieces is not allowed``."""
MAX_JSON_INDENT = 16
"""Largest ``tojson`` indent. Error: ``tojson indent over 16 is not allowed``."""
LOOP_FILTER = "sro-loop"
"""Filter wrapped around every ``{% for %}`` iterable (not a name a template can write)."""


def _check_time() -> budget_.Budget:
    budget = budget_.current()
    budget.check_time()
    return budget


def _text_size(value: Any) -> int:
    """How long ``value``'s text would be (never building a container's text to find out)."""
    return len(value) if isinstance(value, str | bytes) else printed.size(value, limit=_one_value())


def _one_value() -> int:
    return budget_.current().limits.output_bytes


# --- format specifications ---------------------------------------------------------------

_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


def _number(text: str | None) -> int:
    if not text:
        return 0
    if text == "*":
        raise budget_.OverBudget("a '*' width in a format is not allowed")
    return int(text) if len(text) < 10 else 1 << 40


def _argument_size(args: Iterable[Any]) -> int:
    biggest = 0
    for arg in args:
        if isinstance(arg, dict):
            biggest = max(biggest, *(_text_size(v) for v in arg.values()), 0)
        biggest = max(biggest, _text_size(arg))
    return biggest


def _percent_size(fmt: str | bytes, args: Any) -> int:
    """An upper bound of ``len(fmt % args)``."""
    text = fmt.decode("latin-1") if isinstance(fmt, bytes) else fmt
    widest = _argument_size(args if isinstance(args, tuple) else (args,))
    size = len(text)
    for match in _PERCENT.finditer(text):
        size += max(_number(match[1]), _number(match[2])) + widest
    return size


def _format_size(fmt: str, args: Iterable[Any]) -> int:
    """An upper bound of ``len(fmt.format(*args))``."""
    widest = _argument_size(args)
    size = len(fmt)
    for _, field, spec, _ in string.Formatter().parse(fmt):
        if field is None:
            continue
        if spec and "{" in spec:
            raise budget_.OverBudget("a format field inside a format specification is not allowed")
        numbers = [int(n) if len(n) < 10 else 1 << 40 for n in re.findall(r"[0-9]+", spec or "")]
        size += max(numbers, default=0) + widest
    return size


# --- string and bytes methods ------------------------------------------------------------


def _method_size(owner: str | bytes, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """What a growing method of ``owner`` would build, or None for one that cannot grow."""
    if name in {"center", "ljust", "rjust", "zfill"}:
        width = args[0] if args else kwargs.get("width", 0)
        return max(len(owner), width if isinstance(width, int) else 0)
    if name == "expandtabs":
        tabsize = args[0] if args else kwargs.get("tabsize", 8)
        tabs = owner.count("\t") if isinstance(owner, str) else owner.count(b"\t")
        return len(owner) + tabs * (tabsize if isinstance(tabsize, int) else 8)
    if name == "replace" and len(args) >= 2 and isinstance(args[0], type(owner)):
        old: Any = args[0]
        new: Any = args[1]
        found = len(owner) + 1 if not old else owner.count(old)
        count = args[2] if len(args) > 2 else kwargs.get("count", -1)
        if isinstance(count, int) and count >= 0:
            found = min(found, count)
        return len(owner) + found * max(len(new) - len(old), 0)
    if name in {"format", "format_map"} and isinstance(owner, str):
        values = [*args, *kwargs.values()]
        if name == "format_map" and args and isinstance(args[0], dict):
            values = list(args[0].values())
        return _format_size(owner, values)
    return None


_REFUSED_METHODS = frozenset({"translate", "maketrans", "to_bytes"})


# --- filters -----------------------------------------------------------------------------


def _produce(size: int, what: str) -> None:
    budget_.current().produce(size, what=what)


@jinja2.pass_context
def _center(context: Any, value: Any, width: int = 80) -> str:
    text = str(value)
    _produce(max(len(text), int(width)), "center")
    return jinja2.filters.do_center(text, width)


@jinja2.pass_context
def _indent(context: Any, value: Any, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    text = str(value)
    step = len(width) if isinstance(width, str) else int(width)
    _produce(len(text) + 1 + max(step, 0) * (text.count("\n") + 2), "indent")
    return jinja2.filters.do_indent(text, width, first, blank)


@jinja2.pass_context
def _format(context: Any, value: Any, *args: Any, **kwargs: Any) -> str:
    text = str(value)
    _produce(_percent_size(text, tuple(args) or kwargs), "format")
    return jinja2.filters.do_format(text, *args, **kwargs)


@jinja2.pass_context
def _join(context: Any, value: Iterable[Any], d: str = "", attribute: str | int | None = None) -> str:
    items = list(value)
    if attribute is None:
        _produce(sum(_text_size(x) for x in items) + len(str(d)) * max(len(items) - 1, 0), "join")
    else:
        _produce(len(str(d)) * max(len(items) - 1, 0), "join")
    return jinja2.filters.sync_do_join(context.eval_ctx, items, d, attribute)


@jinja2.pass_context
def _replace(context: Any, value: Any, old: Any, new: Any, count: int | None = None) -> str:
    text = str(value)
    size = _method_size(text, "replace", (str(old), str(new), -1 if count is None else count), {})
    _produce(size or len(text), "replace")
    return jinja2.filters.do_replace(context.eval_ctx, text, old, new, count)


@jinja2.pass_context
def _wordwrap(  # noqa: PLR0917 - a filter's arguments arrive positionally, as Jinja's own wordwrap takes them
    context: Any,
    value: Any,
    width: int = 79,
    break_long_words: bool = True,
    wrapstring: str | None = None,
    break_on_hyphens: bool = True,
) -> str:
    text = str(value)
    joint = len(wrapstring) if wrapstring is not None else 1
    _produce(len(text) * (1 + joint) + joint, "wordwrap")
    return jinja2.filters.do_wordwrap(
        context.environment, text, width, break_long_words, wrapstring, break_on_hyphens
    )


def _pieces(count: Any, what: str) -> None:
    if not isinstance(count, int) or count > MAX_ITEMS:
        raise budget_.OverBudget(f"{what} into more than {MAX_ITEMS} pieces is not allowed")


@jinja2.pass_context
def _batch(context: Any, value: Any, linecount: int, fill_with: Any = None) -> Iterator[list[Any]]:
    _pieces(linecount, "batch")
    return jinja2.filters.do_batch(value, linecount, fill_with)


@jinja2.pass_context
def _slice(context: Any, value: Any, slices: int, fill_with: Any = None) -> Iterator[list[Any]]:
    _pieces(slices, "slice")
    return jinja2.filters.sync_do_slice(value, slices, fill_with)


@jinja2.pass_context
def _sum(context: Any, iterable: Iterable[Any], attribute: str | int | None = None, start: Any = 0) -> Any:
    if isinstance(start, bool) or not isinstance(start, int | float):
        raise budget_.OverBudget("sum adds numbers only (start must be a number)")
    return jinja2.filters.sync_do_sum(context.environment, iterable, attribute, start)


@jinja2.pass_context
def _tojson(context: Any, value: Any, indent: int | None = None) -> placeholders.JsonText:
    if indent is not None and (not isinstance(indent, int) or indent > MAX_JSON_INDENT):
        raise budget_.OverBudget(f"tojson indent over {MAX_JSON_INDENT} is not allowed")
    policies = context.environment.policies
    kwargs = dict(policies["json.dumps_kwargs"], indent=indent)
    return placeholders.JsonText(jinja2.utils.htmlsafe_json_dumps(value, dumps=json.dumps, **kwargs))


@jinja2.pass_context
def _loop(context: Any, items: Any) -> Iterator[Any]:
    return budget_.current().loop(items)


def _not_available(name: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise jinja2.exceptions.SecurityError(f"{name} is not available in recipe templates")

    return refuse


BOUNDED_FILTERS: dict[str, Callable[..., Any]] = {
    "center": _center,
    "indent": _indent,
    "format": _format,
    "join": _join,
    "replace": _replace,
    "wordwrap": _wordwrap,
    "batch": _batch,
    "slice": _slice,
    "sum": _sum,
    "tojson": _tojson,
    "urlize": _not_available("urlize"),
    "striptags": _not_available("striptags"),
    "xmlattr": _not_available("xmlattr"),
    "pprint": _not_available("pprint"),  # its indentation grows with depth, past any sizing
    LOOP_FILTER: _loop,
}


# --- the environment ---------------------------------------------------------------------


class Environment(jinja2.sandbox.ImmutableSandboxedEnvironment):
    """The immutable sandbox (no template can change the values another one sees), with
    every call, lookup and operator checked against the render's budget."""

    intercepted_binops = frozenset({"+", "*", "**", "%"})
    code_generator_class = codegen.CodeGenerator

    def __init__(self, **options: Any) -> None:
        super().__init__(finalize=placeholders.finalize, **options)
        self.filters.update(BOUNDED_FILTERS)
        # Every filter may turn its value into text (upper, trim, string, tojson ...): a
        # container that would print to more than one value may have is refused first.
        self.filters = {n: f if n == LOOP_FILTER else _guarded(n, f) for n, f in self.filters.items()}
        self.globals.pop("lipsum", None)

    def call(self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _check_time()
        # Jinja hands str.format and str.format_map out wrapped (``wrap_str_format``); the
        # wrapper keeps the bound method as ``__wrapped__``, whose owner is the format.
        method = getattr(__obj, "__wrapped__", __obj)
        owner = getattr(method, "__self__", None)
        name = getattr(method, "__name__", "")
        if isinstance(owner, str | bytes | int) and name in _REFUSED_METHODS:
            raise jinja2.exceptions.SecurityError(f"{type(owner).__name__}.{name} is not allowed")
        if isinstance(owner, str | bytes):
            if name == "join" and args:
                items = list(args[0])
                args = (items, *args[1:])
                size = sum(_text_size(x) for x in items) + len(owner) * max(len(items) - 1, 0)
            else:
                size = _method_size(owner, name, args, kwargs) or 0
            if size:
                budget_.current().produce(size, what=name)
        return printed.bounded(super().call(__context, __obj, *args, **kwargs), what=name or "a call")

    def getattr(self, obj: Any, attribute: str) -> Any:
        _check_time()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _check_time()
        return super().getitem(obj, argument)

    def concat(self, parts: Iterable[Any]) -> str:
        """Join the output of a macro or a captured block, sized first."""
        pieces = list(parts)
        budget_.current().produce(sum(len(p) for p in pieces), what="a captured block")
        return "".join(pieces)

    def built(self, value: Any) -> Any:
        """A list, tuple or dict a template wrote, once it prints within one value's bound."""
        return printed.bounded(value, what="a list, tuple or dict")

    def join_checked(self, parts: tuple[Any, ...]) -> str:
        texts = [printed.checked_text(p, what="concatenation (~)") for p in parts]
        budget_.current().produce(sum(len(t) for t in texts), what="concatenation (~)")
        return "".join(texts)

    def call_binop(self, context: Any, operator_: str, left: Any, right: Any) -> Any:
        budget = _check_time()
        if operator_ == "+":
            if isinstance(left, str | bytes | list | tuple) and isinstance(right, str | bytes | list | tuple):
                budget.produce(budget_.size_of(left) + budget_.size_of(right), what="concatenation (+)")
            return printed.bounded(left + right, what="concatenation (+)")
        if operator_ == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, str | bytes | list | tuple) and isinstance(times, int):
                    budget.produce(budget_.size_of(seq) * max(times, 0), what="a repetition")
            if isinstance(left, int) and isinstance(right, int):
                _bits(left.bit_length() + right.bit_length())
            return printed.bounded(left * right, what="a repetition")
        if operator_ == "%":
            if isinstance(left, str | bytes):
                budget.produce(_percent_size(left, right), what="% formatting")
            return left % right
        if isinstance(right, int) and abs(right) > MAX_EXPONENT:
            raise budget_.OverBudget(f"an exponent over {MAX_EXPONENT} is not allowed")
        if isinstance(left, int) and isinstance(right, int) and right > 0:
            _bits(left.bit_length() * right)
        return left**right


def _guarded(name: str, run: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(run)  # keeps Jinja's pass_context / pass_eval_context marks
    def guarded(*args: Any, **kwargs: Any) -> Any:
        printed.check_arguments((*args, *kwargs.values()), what=f"the {name} filter")
        return printed.bounded(run(*args, **kwargs), what=f"the {name} filter")

    return guarded


def _bits(bits: int) -> None:
    if bits > MAX_INT_BITS:
        raise budget_.OverBudget(f"an integer of more than {MAX_INT_BITS} bits is not allowed")


def prepare(ast: jinja2.nodes.Template) -> jinja2.nodes.Template:
    """Count every loop's turns; refuse ``{% filter %}`` blocks (raised as syntax errors)."""
    for block in ast.find_all(jinja2.nodes.FilterBlock):
        raise jinja2.TemplateSyntaxError(
            "{% filter %} blocks are not allowed (their output would be read as YAML): "
            "filter a value instead, {{ value | f }}",
            block.lineno,
        )
    for loop in ast.find_all(jinja2.nodes.For):
        counted = jinja2.nodes.Filter(loop.iter, LOOP_FILTER, [], [], None, None)
        loop.iter = counted.set_lineno(loop.iter.lineno)
    return ast
