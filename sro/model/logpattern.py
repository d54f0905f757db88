"""Log patterns (``sro.dev/wait-for-logs``): RE2 syntax, matched in time linear in the line.

The pattern comes from a recipe and the text from an operand's log, and the planner
matches one against the other on the operator's event loop. Python's ``re`` backtracks:
``(a+)+$`` on a few KiB of ``a`` takes longer than the universe has left, and every
other SpecialResource would wait for it. RE2 (``google-re2``) never backtracks: a search
costs time proportional to pattern size times text size, whatever both contain, and its
compiled program is capped in memory. What RE2 cannot do in linear time it refuses to
compile (lookahead, lookbehind, backreferences), so such a pattern is an invalid recipe,
said at validation, never a slow reconcile.

Matching is line by line, each line cut at ``LINE_MAX`` characters: a driver's ready line
is far shorter, and a bounded line bounds every search.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import re2

LINE_MAX = 4096
"""Longest line a pattern is tried on (a longer line is cut to its first LINE_MAX characters)."""
PATTERN_MAX = 4096
"""Longest pattern accepted, in characters; a ready line's pattern is a few dozen."""
PROGRAM_BYTES = 8 * 1024 * 1024
"""Memory RE2 may use for one compiled pattern (its default); a bigger program is refused."""
SYNTAX = "RE2 syntax, matched in linear time"

_UNSUPPORTED = (
    ("(?=", "lookahead (?=...) is not supported"),
    ("(?!", "negative lookahead (?!...) is not supported"),
    ("(?<=", "lookbehind (?<=...) is not supported"),
    ("(?<!", "negative lookbehind (?<!...) is not supported"),
)


class PatternInvalid(ValueError):
    """The pattern cannot be used; ``str()`` says why, in words a recipe author can act on."""


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would print its own copy of every error on stderr
    options.max_mem = PROGRAM_BYTES
    return options


def _explain(pattern: str, raw: str) -> str:
    """A recipe author's reason for an RE2 compile error ``raw``."""
    if raw.startswith("invalid perl operator"):
        for opener, reason in _UNSUPPORTED:
            if opener in pattern:
                return reason
    if raw.startswith("invalid escape sequence: \\") and raw[-1:].isdigit():
        return f"backreferences ({raw.removeprefix('invalid escape sequence: ')}) are not supported"
    if "pattern too large" in raw:
        return f"compiles to more than {PROGRAM_BYTES} bytes"
    return raw


@dataclass(frozen=True)
class LogPattern:
    """A compiled pattern; equal patterns compare equal. ``search`` is safe from any thread."""

    pattern: str
    _program: Any = field(repr=False, compare=False)

    def search(self, line: str) -> bool:
        """Whether the pattern matches somewhere in ``line`` (cut at LINE_MAX first)."""
        return self._program.search(line[:LINE_MAX]) is not None

    def search_whole(self, text: str) -> bool:
        """Whether the pattern matches somewhere in ``text``, however long (still linear)."""
        return self._program.search(text) is not None

    def matching_line(self, text: str) -> str | None:
        """The newest line of ``text`` the pattern matches (cut at LINE_MAX), or None."""
        for line in reversed(text.splitlines()):
            bounded = line[:LINE_MAX]
            if self._program.search(bounded) is not None:
                return bounded
        return None

    def matches(self, text: str) -> bool:
        """Whether any line of ``text`` matches (remembered: every pass asks again about
        the same tails, up to 4 KiB each, of every pod still waiting for its line)."""
        return _matches(self, text)


@functools.lru_cache(maxsize=2048)
def _matches(pattern: LogPattern, text: str) -> bool:
    # Keyed by the pattern (equal patterns are equal) and the tail, which the engine's
    # memory of fetched tails already holds: the cache adds references, not copies.
    return pattern.matching_line(text) is not None


def compile_pattern(pattern: str) -> LogPattern:
    """``pattern`` compiled, or PatternInvalid saying why."""
    if not pattern:
        raise PatternInvalid("must be a non-empty regular expression")
    if len(pattern) > PATTERN_MAX:
        raise PatternInvalid(f"is longer than {PATTERN_MAX} characters")
    try:
        program = re2.compile(pattern, options=_options())
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        raw = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
        why = _explain(pattern, raw)
        raise PatternInvalid(f"is not a valid regular expression ({SYNTAX}): {why}") from None
    return LogPattern(pattern, program)


def problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be used, or None if it can."""
    try:
        compile_pattern(pattern)
    except PatternInvalid as exc:
        return str(exc)
    return None
