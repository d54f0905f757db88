"""pytest imports test modules by their basename (no packages under tests/), so two test
files of the same name in different folders stop the whole run at collection."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_modules_share_a_name() -> None:
    names = Counter(p.name for p in TESTS.rglob("*.py") if p.name not in {"__init__.py", "conftest.py"})
    assert not {n for n, count in names.items() if count > 1}
