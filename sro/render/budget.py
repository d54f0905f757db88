"""What one render of a recipe may spend: wall time, output, scratch memory and loop turns.

A template's author may not be the author of the values it is given, and a single call
(``"x"|center(2000000000)``) can allocate gigabytes before any check between calls sees
it. So every operation that can build a large string or list asks the budget *before*
it builds it (``produce``), every loop turn and every call counts against the clock,
and the rendered output is counted as it is produced. All of it is one ``Budget`` per
render, shared by every template of the render; the sandbox finds it in a context
variable, so a template compiled once can be rendered under many budgets.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Per-recipe render limits (the whole recipe, every kernel group and node)."""

    seconds: float = 5.0
    """Wall time for rendering a whole recipe, YAML parsing included; real recipes take
    milliseconds. Error: ``rendering took longer than 5s``."""
    output_bytes: int = 8 * 1024 * 1024
    """Total rendered text (values counted at their printed size); the API server refuses
    objects over ~1.5 MiB anyway. It also bounds any single string or list one operation
    may build. Errors: ``rendered output exceeds 8388608 bytes``, ``<operation> would
    build <n> bytes, more than the 8388608 one value may have``."""
    work_bytes: int = 64 * 1024 * 1024
    """Everything the size-checked operations (repetition, concatenation, padding,
    indenting, joining, replacing, formatting) build in one render, summed. Error:
    ``the render built more than 67108864 bytes of strings and lists``."""
    loop_items: int = 1_000_000
    """Loop turns (``{% for %}``) of one render, summed over every loop. Error:
    ``loops ran more than 1000000 times``."""


LIST_ITEM_BYTES = 8
"""A list or tuple item is counted as this many bytes (a pointer) by ``produce``."""


class OverBudget(Exception):
    """Raised inside a template when a limit is reached; the caller makes it a TemplateError."""


class Budget:
    """What is left of a render's limits; shared by every template of one render."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.deadline = time.monotonic() + limits.seconds
        self.bytes_left = limits.output_bytes
        self.work_left = limits.work_bytes
        self.loops_left = limits.loop_items

    @property
    def exhausted(self) -> bool:
        return (
            self.bytes_left < 0
            or self.work_left < 0
            or self.loops_left < 0
            or time.monotonic() > self.deadline
        )

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise OverBudget(f"rendering took longer than {self.limits.seconds:g}s")

    def spend(self, size: int) -> None:
        """Count ``size`` bytes of rendered output."""
        self.bytes_left -= size
        if self.bytes_left < 0:
            raise OverBudget(f"rendered output exceeds {self.limits.output_bytes} bytes")
        self.check_time()

    def produce(self, size: int, *, what: str) -> None:
        """Allow an operation to build ``size`` bytes, or raise before it does."""
        if size > self.limits.output_bytes:
            raise OverBudget(
                f"{what} would build {size} bytes, "
                f"more than the {self.limits.output_bytes} one value may have"
            )
        self.work_left -= size
        if self.work_left < 0:
            raise OverBudget(
                f"the render built more than {self.limits.work_bytes} bytes of strings and lists"
            )
        self.check_time()

    def loop(self, items: Any) -> Iterator[Any]:
        """``items``, counting each turn against the loop bound and the clock."""
        for item in items:
            self.loops_left -= 1
            if self.loops_left < 0:
                raise OverBudget(f"loops ran more than {self.limits.loop_items} times")
            if self.loops_left % 1024 == 0:
                self.check_time()
            yield item


_current: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("sro_render_budget", default=None)


def current() -> Budget:
    """The budget of the render in progress; outside one (Jinja folding constants while it
    compiles a template), a fresh default budget, so single-operation bounds still hold."""
    budget = _current.get()
    return budget if budget is not None else Budget(Limits())


def activate(budget: Budget) -> contextvars.Token[Budget | None]:
    return _current.set(budget)


def deactivate(token: contextvars.Token[Budget | None]) -> None:
    _current.reset(token)


def size_of(value: Any) -> int:
    """Bytes ``produce`` counts for ``value``: characters of text, pointers of a list."""
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, list | tuple):
        return len(value) * LIST_ITEM_BYTES
    return 0
