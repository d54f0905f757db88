"""Garbage collections are timed while the recorder is installed, and only then."""

from __future__ import annotations

import gc

import pytest

from sro.observe import gcpause

pytestmark = pytest.mark.unit


def _cycles(count: int) -> None:
    """Garbage only the cyclic collector frees: ``count`` lists that hold themselves."""
    for _ in range(count):
        held: list[object] = []
        held.append(held)


def test_a_full_collection_is_timed_with_its_generation() -> None:
    with gcpause.Pauses() as pauses:
        _cycles(50_000)
        gc.collect()
        taken = pauses.take()
    full = [p for p in taken if p.generation == 2]
    assert full, taken
    assert all(p.seconds > 0 for p in full)
    assert pauses.take() == []  # taken once


def test_young_collections_set_off_by_allocation_are_timed_too() -> None:
    with gcpause.Pauses() as pauses:
        young, *_ = gc.get_threshold()
        _cycles(young * 3)  # containers enough to start the young generation's collection
        taken = pauses.take()
    assert any(p.generation == 0 for p in taken), taken


def test_nothing_is_recorded_once_removed_and_install_is_once() -> None:
    pauses = gcpause.Pauses().install().install()
    assert gc.callbacks.count(pauses) == 1
    pauses.remove()
    assert pauses not in gc.callbacks
    gc.collect()
    assert pauses.take() == []


def test_the_deque_keeps_the_newest_when_nobody_takes() -> None:
    pauses = gcpause.Pauses()
    for generation in range(gcpause.KEPT + 5):
        pauses("start", {"generation": generation})
        pauses("stop", {"generation": generation, "collected": 0, "uncollectable": 0})
    taken = pauses.take()
    assert len(taken) == gcpause.KEPT
    assert taken[0].generation == 5 and taken[-1].generation == gcpause.KEPT + 4


def test_a_stop_without_its_start_is_not_a_pause() -> None:
    pauses = gcpause.Pauses()
    pauses("stop", {"generation": 2, "collected": 0, "uncollectable": 0})
    assert pauses.take() == []
