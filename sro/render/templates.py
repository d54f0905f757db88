"""Jinja2 in its sandbox, with undefined values as errors and a budget per recipe render.

The author of a SpecialResource controls ``set`` but may not be the author of the recipe,
so a template must not be able to run long, produce huge output or reach Python
internals. The sandbox blocks the internals; the ``Budget`` (time and output bytes) is
checked on every call, attribute lookup, repetition and output chunk a template
produces, so even a tight loop stops at the deadline. Templates are compiled once, when
a recipe is loaded; errors carry the template's line mapped back into its file.
"""

from __future__ import annotations

import contextvars
import operator
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jinja2
import jinja2.exceptions
import jinja2.sandbox

from sro import errors


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Per-recipe render limits (the whole recipe, every kernel group and node)."""

    seconds: float = 5.0
    """Wall time for rendering a whole recipe; real recipes take milliseconds."""
    output_bytes: int = 8 * 1024 * 1024
    """Total rendered text; the API server refuses objects over ~1.5 MiB anyway."""


class Budget:
    """What is left of a render's limits; shared by every template of one render."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.deadline = time.monotonic() + limits.seconds
        self.bytes_left = limits.output_bytes

    @property
    def exhausted(self) -> bool:
        return self.bytes_left < 0 or time.monotonic() > self.deadline

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise _OverBudget(f"rendering took longer than {self.limits.seconds:g}s")

    def spend(self, size: int) -> None:
        self.bytes_left -= size
        if self.bytes_left < 0:
            raise _OverBudget(f"rendered output exceeds {self.limits.output_bytes} bytes")
        self.check_time()


class _OverBudget(Exception):
    """Raised inside a template when the budget runs out; becomes a TemplateError."""


_current: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("sro_render_budget", default=None)


def _check() -> None:
    budget = _current.get()
    if budget is not None:
        budget.check_time()


class _Environment(jinja2.sandbox.ImmutableSandboxedEnvironment):
    """The immutable sandbox (no template can change the values another one sees), plus
    budget checks on calls, lookups and repetition operators."""

    intercepted_binops = frozenset({"*", "**"})

    def call(self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _check()
        return super().call(__context, __obj, *args, **kwargs)

    def getattr(self, obj: Any, attribute: str) -> Any:
        _check()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _check()
        return super().getitem(obj, argument)

    def call_binop(self, context: Any, operator_: str, left: Any, right: Any) -> Any:
        _check()
        budget = _current.get()
        limit = budget.bytes_left if budget is not None else 1 << 20
        if operator_ == "*":
            for seq, times in ((left, right), (right, left)):
                sized = isinstance(seq, str | list | tuple) and isinstance(times, int)
                if sized and len(seq) * times > limit:
                    raise _OverBudget("a repetition would exceed the output limit")
            return operator.mul(left, right)
        if isinstance(right, int) and abs(right) > 1024:
            raise _OverBudget("an exponent over 1024 is not allowed")
        return operator.pow(left, right)


def environment() -> jinja2.Environment:
    """The environment every recipe template is compiled in."""
    return _Environment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=False,
        lstrip_blocks=False,
    )


_ENV = environment()


@dataclass(frozen=True, kw_only=True)
class Compiled:
    """One compiled document template and where its text starts in its file."""

    template: jinja2.Template
    location: errors.Location  # the document's first line

    def render(self, values: Mapping[str, Any], *, budget: Budget) -> str:
        """Render under ``budget``; any failure is a TemplateError at the template's line."""
        token = _current.set(budget)
        parts: list[str] = []
        try:
            for chunk in self.template.generate(**values):
                budget.spend(len(chunk))
                parts.append(chunk)
        except _OverBudget as exc:
            raise errors.TemplateError(
                str(exc), location=self._at(_template_line(exc, self.template))
            ) from None
        except jinja2.UndefinedError as exc:
            line = _template_line(exc, self.template)
            raise errors.TemplateError(f"undefined value: {exc.message}", location=self._at(line)) from None
        except jinja2.exceptions.SecurityError as exc:
            line = _template_line(exc, self.template)
            raise errors.TemplateError(
                f"not allowed in the sandbox: {exc}", location=self._at(line)
            ) from None
        except jinja2.TemplateError as exc:
            line = _template_line(exc, self.template)
            raise errors.TemplateError(f"template error: {exc}", location=self._at(line)) from None
        except RecursionError:
            raise errors.TemplateError(
                "recursion too deep (a macro calling itself?)", location=self.location
            ) from None
        except (ArithmeticError, TypeError, ValueError, LookupError, AttributeError) as exc:
            line = _template_line(exc, self.template)
            raise errors.TemplateError(f"{type(exc).__name__}: {exc}", location=self._at(line)) from None
        finally:
            _current.reset(token)
        return "".join(parts)

    def _at(self, template_line: int) -> errors.Location:
        return errors.Location(file=self.location.file, line=self.location.line + max(template_line, 1) - 1)


def compile_document(text: str, *, location: errors.Location) -> Compiled:
    """Compile one document; a syntax error is a TemplateError at its line in the file."""
    try:
        template = _ENV.from_string(text)
    except jinja2.TemplateSyntaxError as exc:
        line = location.line + (exc.lineno or 1) - 1
        raise errors.TemplateError(
            f"template syntax error: {exc.message}", location=errors.Location(file=location.file, line=line)
        ) from None
    return Compiled(template=template, location=location)


def _template_line(exc: BaseException, template: jinja2.Template) -> int:
    """The template line an exception was raised at, from Jinja's rewritten traceback."""
    line = 0
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    if line:
        return line
    lines = getattr(exc, "lineno", None)
    return int(lines) if isinstance(lines, int) else 1
