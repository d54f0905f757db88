"""docs/troubleshooting.md keeps up with the code: its table of condition reasons lists every
reason sro can write and no other, its table of Events every Event reason, and its state
graphs are what ``sro render --graph`` prints for the built-in recipes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sro import errors
from sro.render import graph
from sro.render import recipe as recipe_
from sro.status import conditions, events

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
PAGE = REPO / "docs" / "troubleshooting.md"
CONDITION_TYPES = {conditions.READY, conditions.PROGRESSING, conditions.DEGRADED}


def _table_after(heading: str) -> set[str]:
    """The backquoted first cells of the table under ``heading``."""
    section = PAGE.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([A-Za-z]+)` \|", section, flags=re.MULTILINE))


def _constants(module: object) -> set[str]:
    return {
        value
        for name, value in vars(module).items()
        if name.isupper()
        and isinstance(value, str)
        and re.fullmatch(r"[A-Z][a-z]+(?:[A-Z][a-z]+)+|[A-Z][a-z]+", value)
    }


def _recipe_error_reasons() -> set[str]:
    found = set()
    pending = [errors.RecipeError]
    while pending:
        cls = pending.pop()
        found.add(cls.reason)
        pending.extend(cls.__subclasses__())
    return found


def test_every_condition_reason_the_code_writes_is_explained_and_no_other() -> None:
    written = (_constants(conditions) - CONDITION_TYPES) | conditions.ERROR_REASONS | _recipe_error_reasons()
    assert _table_after("Condition reasons") == written


def test_every_event_reason_is_explained_and_no_other() -> None:
    assert _table_after("Events") == _constants(events)


@pytest.mark.parametrize("name", ["nvidia-gpu", "simple-kmod"])
def test_the_state_graph_of_each_built_in_recipe_is_what_render_graph_prints(name: str) -> None:
    picture = graph.mermaid(recipe_.load_directory(REPO / "assets" / name))
    assert f"### `{name}`\n\n```mermaid\n{picture}```\n" in PAGE.read_text(), (
        f"docs/troubleshooting.md: paste `sro render --recipe assets/{name} --graph` under ### `{name}`"
    )
