"""heap.settle: young collections wait, and what the caches listed is never traversed again."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from sro.runtime import heap

pytestmark = pytest.mark.unit


@pytest.fixture
def restored_gc() -> Iterator[None]:
    before = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


@pytest.mark.usefixtures("restored_gc")
def test_settle_freezes_the_living_and_spaces_collections() -> None:
    cached = [{"metadata": {"name": f"node-{i}"}} for i in range(1000)]
    heap.settle()
    assert gc.get_threshold() == (heap.YOUNG, heap.MIDDLE, heap.OLD)
    assert gc.get_freeze_count() >= len(cached)
    assert not any(o is cached for o in gc.get_objects())  # frozen objects are no generation's
