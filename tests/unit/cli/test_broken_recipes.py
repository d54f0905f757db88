"""``sro lint`` on the corpus of broken recipes in tests/recipes/broken/.

Each case is a recipe directory with an ``expected.txt`` holding exactly the lines
``sro lint`` must print (file:line and reason; ``#`` lines describe the case). The
test fails if a line is missing, if lint prints anything else, or if it exits 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sro import cli

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
CORPUS = REPO / "tests" / "recipes" / "broken"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.txt").is_file())


def test_the_corpus_covers_every_kind_of_mistake() -> None:
    assert {
        "yaml-error",
        "duplicate-key",
        "unknown-recipe-key",
        "template-syntax",
        "undefined-value",
        "unknown-annotation",
        "invalid-annotation-value",
        "after-cycle",
        "missing-state-dir",
        "empty-state-dir",
        "duplicate-object",
        "other-namespace",
        "missing-name",
        "kind-not-served",
        "bad-wait-for-logs",
    } <= set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_lint_prints_exactly_the_expected_file_line_and_reason(
    case: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    expected = [
        line
        for line in (CORPUS / case / "expected.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert expected, "expected.txt names at least one problem"
    code = cli.main(["lint", f"tests/recipes/broken/{case}"])
    printed = [line for line in capsys.readouterr().out.splitlines() if line]
    assert printed == expected
    assert code == 1
