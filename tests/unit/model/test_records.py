"""``model.records``: a node record anyone wrote reads as None when unreadable, and only
short texts' answers are kept.

Covers: JSON of any shape decodes; not JSON, and JSON nested past the decoder's depth,
read as None; ``short_cached`` answers as its parser does at every length, parses a short
text once and a long one every time.
"""

from __future__ import annotations

import pytest

from sro.model import records

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("text", "value"), [('{"a": 1}', {"a": 1}), ("[1, 2]", [1, 2]), ('"x"', "x")])
def test_json_of_any_shape_decodes(text: str, value: object) -> None:
    assert records.loads(text) == value


@pytest.mark.parametrize("text", ["", "not json", "{", "[" * 100_000 + "]" * 100_000])
def test_unreadable_text_reads_as_none(text: str) -> None:
    assert records.loads(text) is None


def test_only_a_short_texts_answer_is_kept() -> None:
    calls: list[str] = []

    def parse(text: str) -> int:
        calls.append(text)
        return len(text)

    parsed = records.short_cached(parse, longest=4, size=8)
    assert [parsed("abcd"), parsed("abcd"), parsed("abcde"), parsed("abcde")] == [4, 4, 5, 5]
    assert calls == ["abcd", "abcde", "abcde"]
