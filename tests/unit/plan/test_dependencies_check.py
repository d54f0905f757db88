"""Dependency checks between SpecialResources: absent dependencies, uncovered nodes, cycles.

Covers the pure ``sro.plan.dependencies.check``; the node-affinity that makes nodes
wait is the render core's and is tested there.
"""

import pytest

from sro.plan import dependencies
from sro.plan.dependencies import Peer

pytestmark = pytest.mark.unit


def peers(*items: Peer) -> dict[str, Peer]:
    return {p.name: p for p in items}


def test_a_special_resource_without_dependencies_is_fine() -> None:
    report = dependencies.check("gpu", peers(Peer(name="gpu", nodes=frozenset({"a"}))))
    assert report.ok
    assert report.reason == ""
    assert report.waiting == frozenset()


def test_a_dependency_that_selects_every_node_holds_nothing_back() -> None:
    report = dependencies.check(
        "gpu",
        peers(
            Peer(name="gpu", dependencies=("ofed",), nodes=frozenset({"a", "b"})),
            Peer(name="ofed", nodes=frozenset({"a", "b", "c"})),
        ),
    )
    assert report.ok


def test_a_missing_dependency_is_named_and_every_node_waits() -> None:
    report = dependencies.check(
        "gpu", peers(Peer(name="gpu", dependencies=("ofed", "kmm"), nodes=frozenset({"a", "b"})))
    )
    assert report.reason == "DependencyMissing"
    assert report.absent == ("kmm", "ofed")
    assert report.waiting == {"a", "b"}
    assert "kmm, ofed" in report.message()


def test_a_dependency_that_misses_some_nodes_names_them_and_only_they_wait() -> None:
    report = dependencies.check(
        "gpu",
        peers(
            Peer(name="gpu", dependencies=("ofed",), nodes=frozenset({"a", "b", "c"})),
            Peer(name="ofed", nodes=frozenset({"b"})),
        ),
    )
    assert report.reason == "DependencyMissing"
    assert report.uncovered == {"ofed": ("a", "c")}
    assert report.waiting == {"a", "c"}
    assert "ofed does not select 2 node(s): a, c" in report.message()


def test_long_node_lists_are_cut_in_the_message() -> None:
    nodes = frozenset(f"n{i:02d}" for i in range(12))
    report = dependencies.check(
        "gpu", peers(Peer(name="gpu", dependencies=("ofed",), nodes=nodes), Peer(name="ofed"))
    )
    assert "and 7 more" in report.message()


def test_every_member_of_a_cycle_reports_the_whole_cycle() -> None:
    table = peers(
        Peer(name="a", dependencies=("b",)),
        Peer(name="b", dependencies=("c",)),
        Peer(name="c", dependencies=("a",)),
        Peer(name="d", dependencies=("a",)),
    )
    for member in "abc":
        report = dependencies.check(member, table)
        assert report.reason == "DependencyCycle"
        assert report.cycle == ("a", "b", "c")
    assert dependencies.check("d", table).cycle == ()


def test_a_special_resource_depending_on_itself_is_a_cycle_of_one() -> None:
    report = dependencies.check("a", peers(Peer(name="a", dependencies=("a",), nodes=frozenset({"x"}))))
    assert report.cycle == ("a",)
    assert report.message() == "dependency cycle: a -> a"
    assert report.waiting == {"x"}


def test_a_diamond_of_dependencies_is_not_a_cycle() -> None:
    table = peers(
        Peer(name="top", dependencies=("left", "right")),
        Peer(name="left", dependencies=("base",)),
        Peer(name="right", dependencies=("base",)),
        Peer(name="base"),
    )
    assert all(dependencies.check(n, table).cycle == () for n in table)
