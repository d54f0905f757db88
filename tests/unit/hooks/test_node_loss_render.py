"""A node held after losing its labels (``plan.node_loss``) renders exactly as before it
lost them: the render memo's inputs are equal, so the engine renders nothing again and
the kernel group's DaemonSet and the node's per-node pods stay as they were."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

import pytest
from conftest import UBUNTU, make_node, make_recipe, make_sr, render
from test_render_inputs import DS, POD, _env

from sro.hooks import pipeline
from sro.model import views
from sro.plan import node_loss

pytestmark = pytest.mark.unit

RECIPE = make_recipe({"driver": {"ds.yaml": DS}, "check": {"pod.yaml": POD}})
NODES = (make_node("a"), make_node("b"), make_node("c", UBUNTU))
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _stripped(node: views.NodeView) -> views.NodeView:
    """The node as an nfd-master restart leaves it: no feature.node.kubernetes.io/ label."""
    kept = {k: v for k, v in node.labels.items() if not k.startswith(views.NFD)}
    return replace(node, labels=MappingProxyType(kept))


def _decide(nodes: tuple[views.NodeView, ...], memory: node_loss.Memory, at: float) -> node_loss.Decision:
    sr = make_sr()
    return node_loss.for_sr(
        sr, nodes, memory, recipe_selector=RECIPE.node_selector, now=T0 + timedelta(seconds=at)
    )


def test_a_held_node_that_lost_every_nfd_label_renders_as_before() -> None:
    env = _env()
    before = _decide(NODES, node_loss.Memory(), 0)
    flapped = (NODES[0], NODES[1], _stripped(NODES[2]))
    held = _decide(flapped, before.memory, 5)
    assert [h.node for h in held.held] == ["c"]
    sr = make_sr()
    assert pipeline.render_inputs(sr, RECIPE, held.nodes, env=env) == pipeline.render_inputs(
        sr, RECIPE, NODES, env=env
    )
    assert render(sr, RECIPE, held.nodes) == render(sr, RECIPE, NODES)
    let_go = _decide(flapped, held.memory, 305)
    assert let_go.held == () and let_go.released == 1
    assert render(sr, RECIPE, let_go.nodes) != render(sr, RECIPE, NODES)
