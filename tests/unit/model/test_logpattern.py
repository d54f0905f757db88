"""wait-for-logs patterns: linear-time matching, and a clear refusal of what RE2 cannot run."""

from __future__ import annotations

import time

import pytest

from sro.model import logpattern
from sro.plan import readiness

pytestmark = pytest.mark.unit

PATHOLOGICAL = ("(a+)+$", "^(a*)*b$", "(a|aa)+$", "^(.*a){20}$", "^(a|a?)+$", "^(\\w+\\s?)*$")


@pytest.mark.parametrize("pattern", PATHOLOGICAL)
def test_a_backtracking_pattern_on_4_kib_takes_milliseconds(pattern: str) -> None:
    compiled = logpattern.compile_pattern(pattern)
    line = "a" * (logpattern.LINE_MAX - 1) + "!"
    started = time.perf_counter()
    found = compiled.search(line)
    one_line = time.perf_counter() - started
    tail = readiness.condense((line + "\n") * 64, pattern)  # 256 KiB, as one log fetch
    whole_tail = time.perf_counter() - started
    assert not found
    assert len(tail) == readiness.LOG_KEEP_BYTES
    assert one_line < 0.05, f"{pattern!r} took {one_line:.3f}s on one 4 KiB line"
    assert whole_tail < 0.5, f"{pattern!r} took {whole_tail:.3f}s on a 256 KiB tail"


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("driver (?=loaded)", "lookahead (?=...) is not supported"),
        ("ready(?!ish)", "negative lookahead (?!...) is not supported"),
        ("(?<=driver )ready", "lookbehind (?<=...) is not supported"),
        ("(?<!not )ready", "negative lookbehind (?<!...) is not supported"),
        (r"(ready) \1", r"backreferences (\1) are not supported"),
        ("driver (loaded", "missing ): driver (loaded"),
    ],
)
def test_what_re2_cannot_run_is_refused_saying_why(pattern: str, reason: str) -> None:
    expected = f"is not a valid regular expression (RE2 syntax, matched in linear time): {reason}"
    assert logpattern.problem(pattern) == expected
    with pytest.raises(logpattern.PatternInvalid, match="RE2 syntax"):
        logpattern.compile_pattern(pattern)


def test_empty_and_overlong_patterns_are_refused() -> None:
    assert logpattern.problem("") == "must be a non-empty regular expression"
    too_long = "x" * (logpattern.PATTERN_MAX + 1)
    assert logpattern.problem(too_long) == f"is longer than {logpattern.PATTERN_MAX} characters"


def test_matching_is_line_by_line_with_lines_cut() -> None:
    compiled = logpattern.compile_pattern(r"^driver (loaded|ready)$")
    assert compiled.matches("building\ndriver loaded\nheartbeat 1\n")
    assert compiled.matching_line("driver ready\nx\ndriver loaded\ny") == "driver loaded"
    assert not compiled.matches("x" * logpattern.LINE_MAX + "driver loaded")
    assert compiled == logpattern.compile_pattern(r"^driver (loaded|ready)$")


def test_re2_prints_nothing_of_its_own_on_a_refused_pattern(capfd: pytest.CaptureFixture[str]) -> None:
    assert logpattern.problem("a(?=b)") is not None
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
