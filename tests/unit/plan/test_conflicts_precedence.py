"""Precedence between SpecialResources that use one recipe on overlapping nodes.

Covers the pure ``sro.plan.conflicts.check``: who loses which nodes, and the message.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sro.plan import conflicts
from sro.plan.conflicts import Claim

pytestmark = pytest.mark.unit

T1 = "2026-11-22T06:00:00Z"
T2 = "2026-11-22T07:00:00Z"


def test_the_newer_special_resource_loses_the_overlapping_nodes() -> None:
    claims = [
        Claim(name="old", recipe="nvidia-gpu", created=T1, nodes=frozenset({"a", "b"})),
        Claim(name="new", recipe="nvidia-gpu", created=T2, nodes=frozenset({"b", "c"})),
    ]
    assert conflicts.check("old", claims).ok
    report = conflicts.check("new", claims)
    assert report.lost_to == {"old": ("b",)}
    assert report.excluded == {"b"}
    assert "SpecialResource old" in report.message()
    assert ": b" in report.message()


def test_equal_creation_times_are_broken_by_name() -> None:
    claims = [
        Claim(name="zeta", recipe="r", created=T1, nodes=frozenset({"a"})),
        Claim(name="alpha", recipe="r", created=T1, nodes=frozenset({"a"})),
    ]
    assert conflicts.check("alpha", claims).ok
    assert conflicts.check("zeta", claims).excluded == {"a"}


def test_different_recipes_never_conflict() -> None:
    claims = [
        Claim(name="gpu", recipe="nvidia-gpu", created=T1, nodes=frozenset({"a"})),
        Claim(name="kmod", recipe="simple-kmod", created=T2, nodes=frozenset({"a"})),
    ]
    assert conflicts.check("kmod", claims).ok


def test_disjoint_selections_never_conflict() -> None:
    claims = [
        Claim(name="one", recipe="r", created=T1, nodes=frozenset({"a"})),
        Claim(name="two", recipe="r", created=T2, nodes=frozenset({"b"})),
    ]
    assert conflicts.check("two", claims).ok


def test_a_loser_to_two_winners_names_both() -> None:
    claims = [
        Claim(name="w1", recipe="r", created=T1, nodes=frozenset({"a"})),
        Claim(name="w2", recipe="r", created=T1, nodes=frozenset({"b"})),
        Claim(name="l", recipe="r", created=T2, nodes=frozenset({"a", "b", "c"})),
    ]
    assert conflicts.winners_over("l", claims) == ("w1", "w2")
    assert conflicts.check("l", claims).excluded == {"a", "b"}


claim_sets = st.lists(
    st.builds(
        Claim,
        name=st.sampled_from("abcdef"),
        recipe=st.sampled_from(["r", "s"]),
        created=st.sampled_from([T1, T2]),
        nodes=st.frozensets(st.sampled_from("uvwxyz"), max_size=4),
    ),
    unique_by=lambda c: c.name,
    min_size=1,
)


@given(claim_sets)
def test_no_node_is_kept_by_two_special_resources_of_one_recipe(claims: list[Claim]) -> None:
    kept = {c.name: c.nodes - conflicts.check(c.name, claims).excluded for c in claims}
    for first in claims:
        for second in claims:
            if first.name < second.name and first.recipe == second.recipe:
                assert not (kept[first.name] & kept[second.name])


@given(claim_sets)
def test_the_first_in_precedence_never_loses_anything(claims: list[Claim]) -> None:
    for recipe in {c.recipe for c in claims}:
        first = min((c for c in claims if c.recipe == recipe), key=lambda c: c.precedence)
        assert conflicts.check(first.name, claims).ok
