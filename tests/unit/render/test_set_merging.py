"""How ``spec.set`` merges over recipe defaults, and the other template values (sro.render.values).

Covers the contract's merge rules (mappings merge, lists and scalars replace, null
removes) by example and as properties, and the cluster version split.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sro.render import values

pytestmark = pytest.mark.unit


def test_mappings_merge_lists_and_scalars_replace_and_null_removes() -> None:
    defaults = {
        "driver": {"version": "1", "repo": "nvcr.io", "args": ["a", "b"]},
        "grafana": {"on": True},
        "x": 1,
    }
    overrides = {"driver": {"version": "2", "args": ["c"]}, "grafana": None, "y": {"z": None, "w": 3}}
    assert values.merge(defaults, overrides) == {
        "driver": {"version": "2", "repo": "nvcr.io", "args": ["c"]},
        "x": 1,
        "y": {"w": 3},
    }


def test_a_scalar_can_replace_a_mapping_and_the_inputs_are_not_modified() -> None:
    defaults = {"a": {"b": 1}}
    overrides = {"a": "flat"}
    before = copy.deepcopy(defaults)
    assert values.merge(defaults, overrides) == {"a": "flat"}
    assert defaults == before


leaf = st.one_of(st.integers(), st.text(max_size=5), st.booleans())
data = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=20,
)
mappings = st.dictionaries(st.text(max_size=3), data, max_size=5)


def without_nulls(value: Any) -> bool:
    if isinstance(value, dict):
        return all(v is not None and without_nulls(v) for v in value.values())
    if isinstance(value, list):
        return all(without_nulls(v) for v in value)
    return True


@given(defaults=mappings)
def test_merging_nothing_over_defaults_gives_the_defaults(defaults: dict[str, Any]) -> None:
    assert values.merge(defaults, {}) == defaults


@given(defaults=mappings, overrides=mappings)
def test_every_override_key_wins_and_every_other_default_stays(
    defaults: dict[str, Any], overrides: dict[str, Any]
) -> None:
    merged = values.merge(defaults, overrides)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(defaults.get(key), dict):
            assert set(value) <= set(merged[key])
        else:
            assert merged[key] == value
    for key in set(defaults) - set(overrides):
        assert merged[key] == defaults[key]


@given(defaults=mappings, overrides=mappings)
def test_merging_the_same_overrides_twice_changes_nothing_more(
    defaults: dict[str, Any], overrides: dict[str, Any]
) -> None:
    once = values.merge(defaults, overrides)
    assert values.merge(once, overrides) == once


@given(defaults=mappings, removed=st.sets(st.text(max_size=3), max_size=3))
def test_null_removes_a_default_and_never_appears_in_the_result(
    defaults: dict[str, Any], removed: set[str]
) -> None:
    merged = values.merge(defaults, dict.fromkeys(removed))
    assert not (set(merged) & removed)
    assert without_nulls(merged)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1.36", ("1.36", 1, 36)), ("v1.36.3", ("1.36.3", 1, 36)), ("1.30+", ("1.30+", 1, 30))],
)
def test_the_cluster_version_splits_into_major_and_minor(text: str, expected: tuple[Any, ...]) -> None:
    got = values.ClusterInfo(version=text).values()
    assert (got["version"], got["major"], got["minor"]) == expected
