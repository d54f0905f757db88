"""The chain-of-states floor of ``hack/bench converge`` (hack/lib/simcluster/converge_floor.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack" / "lib"))
from simcluster import converge_floor

pytestmark = pytest.mark.unit


def test_the_chain_is_the_longest_after_path_of_fastest_pods() -> None:
    after = {"a": (), "b": ("a",), "c": ("b",), "d": ("a",), "e": ("c", "d")}
    fastest = {"a": 1.0, "b": 2.0, "c": 0.5, "d": 4.0, "e": 0.25}
    # a, d, e = 5.25 beats a, b, c, e = 3.75
    assert converge_floor.chain_seconds(fastest, after) == pytest.approx(5.25)


def test_states_without_pods_add_nothing() -> None:
    assert converge_floor.chain_seconds({"b": 2.0}, {"a": (), "b": ("a",), "c": ("b",)}) == pytest.approx(2.0)
    assert converge_floor.chain_seconds({}, {}) == 0.0


def test_a_cycle_is_refused() -> None:
    with pytest.raises(ValueError, match="cycle"):
        converge_floor.chain_seconds({"a": 1.0}, {"a": ("b",), "b": ("a",)})


def test_each_states_fastest_pod_counts_from_when_it_was_first_seen() -> None:
    times = converge_floor.PodTimes()

    def pod(uid: str, state: str) -> dict[str, object]:
        return {"metadata": {"uid": uid, "labels": {converge_floor.STATE_LABEL: state}}}

    times.saw(pod("1", "s"), done=False)
    times.saw(pod("2", "s"), done=False)
    times.saw(pod("2", "s"), done=True)
    times.saw(pod("1", "s"), done=True)
    times.saw(pod("3", "t"), done=False)
    assert set(times.fastest) == {"s"}  # t's pod is not done
    assert 0.0 <= times.fastest["s"] < 5.0
