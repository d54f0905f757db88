"""The one node-selection rule (sro.model.selection) that render, plan and the node watch share."""

from __future__ import annotations

from typing import Any

import pytest

from sro.model import selection, views
from sro.model import specialresource as sr_model

pytestmark = pytest.mark.unit

GPU = {"feature.node.kubernetes.io/pci-10de.present": "true"}


def node(name: str, **labels: str) -> views.NodeView:
    return views.NodeView(name=name, labels=labels)


def sr(**spec: Any) -> sr_model.SpecialResource:
    return sr_model.parse(
        {
            "apiVersion": "sro.dev/v1alpha1",
            "kind": "SpecialResource",
            "metadata": {"name": "gpu", "uid": "u", "generation": 1},
            "spec": {"recipe": "nvidia-gpu", **spec},
        }
    )


def test_a_node_matches_when_it_carries_every_label_with_the_same_value() -> None:
    both = {"a": "1", "b": "2"}
    assert selection.matches(node("n", a="1", b="2", c="3"), both)
    assert not selection.matches(node("n", a="1"), both), "a missing label"
    assert not selection.matches(node("n", a="1", b="3"), both), "a different value"
    assert selection.matches({"a": "1", "b": "2"}, both), "labels alone work the same"
    assert selection.matches(node("n"), {}), "an empty selector selects every node"


def test_select_sorts_by_name_and_leaves_out_the_excluded() -> None:
    nodes = [node("c", **GPU), node("a", **GPU), node("b"), node("d", **GPU)]
    assert [n.name for n in selection.select(nodes, GPU)] == ["a", "c", "d"]
    assert [n.name for n in selection.select(nodes, GPU, excluding=frozenset({"c"}))] == ["a", "d"]
    assert selection.selected_names(nodes, GPU) == frozenset({"a", "c", "d"})


def test_the_specialresources_own_selector_wins_even_when_empty() -> None:
    recipe_default = {"recipe": "default"}
    assert selection.effective_selector(sr(nodeSelector={"x": "y"}), recipe_default=recipe_default) == {
        "x": "y"
    }
    assert selection.effective_selector(sr(nodeSelector={}), recipe_default=recipe_default) == {}
    assert selection.effective_selector(sr(), recipe_default=recipe_default) == recipe_default
    assert selection.effective_selector(sr(), recipe_default=None) is None, "an unreadable recipe: unknown"
    assert selection.effective_selector(sr(nodeSelector={"x": "y"}), recipe_default=None) == {"x": "y"}
