"""node_loss.decide: which nodes a label flap holds, for how long, and the views it renders with.

Covers a flap absorbed within the period, a loss let go when it ends, a kernel label that
disappears (held) or changes (acted on at once), a changed selector (acted on at once),
a restarted process (the clock restarts for nodes carrying the SpecialResource's marks),
and a period of 0. The engine's use of it is covered by the e2e test.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import MappingProxyType

import pytest

from sro.model import views
from sro.plan import lifecycle, node_loss

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GPU = "feature.node.kubernetes.io/pci-10de.present"
SELECTOR = {GPU: "true"}
KERNEL = "5.14.0-427.13.1.el9_4.x86_64"


def node(
    name: str,
    *,
    gpu: bool = True,
    kernel: str | None = KERNEL,
    extra: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> views.NodeView:
    labels = {
        **({GPU: "true"} if gpu else {}),
        **({views.KERNEL_LABEL: kernel} if kernel else {}),
        **(extra or {}),
    }
    return views.NodeView(
        name=name,
        labels=MappingProxyType(labels),
        annotations=MappingProxyType(annotations or {}),
        kernel_version="6.0.0-nodeinfo",
    )


def step(
    nodes: list[views.NodeView], memory: node_loss.Memory, *, at: float, grace: float = 60
) -> node_loss.Decision:
    return node_loss.decide(
        nodes, memory, sr_name="gpu", selector=SELECTOR, grace=grace, now=T0 + timedelta(seconds=at)
    )


def test_a_node_that_loses_its_selection_labels_is_held_with_them_overlaid_until_the_period_ends() -> None:
    first = step([node("a"), node("b")], node_loss.Memory(), at=0)
    assert first.held == () and first.due(T0) is None
    lost = step([node("a", gpu=False), node("b")], first.memory, at=10)
    assert [h.node for h in lost.held] == ["a"]
    assert lost.held[0].until == T0 + timedelta(seconds=70)
    assert lost.held[0].missing == (GPU,)
    assert lost.seen == 1
    assert lost.due(T0 + timedelta(seconds=10)) == 60
    rendered = {n.name: n for n in lost.nodes}
    assert rendered["a"].labels[GPU] == "true"
    assert rendered["a"].labels[views.KERNEL_LABEL] == KERNEL
    later = step([node("a", gpu=False), node("b")], lost.memory, at=50)
    assert [h.node for h in later.held] == ["a"] and later.seen == 0
    assert later.held[0].until == T0 + timedelta(seconds=70)


def test_labels_back_within_the_period_are_a_flap_absorbed() -> None:
    memory = step([node("a")], node_loss.Memory(), at=0).memory
    memory = step([node("a", gpu=False, kernel=None)], memory, at=5).memory
    back = step([node("a")], memory, at=20)
    assert back.held == () and back.absorbed == 1 and back.released == 0
    again = step([node("a", gpu=False)], back.memory, at=30)
    assert again.held[0].until == T0 + timedelta(seconds=90)  # a new flap starts a new period


def test_a_node_still_without_its_labels_when_the_period_ends_is_let_go() -> None:
    memory = step([node("a")], node_loss.Memory(), at=0).memory
    memory = step([node("a", gpu=False)], memory, at=5).memory
    gone = step([node("a", gpu=False)], memory, at=65)
    assert gone.held == () and gone.released == 1
    assert gone.nodes[0].labels.get(GPU) is None
    assert "a" not in gone.memory.nodes
    assert step([node("a", gpu=False)], gone.memory, at=70).held == ()


def test_a_kernel_label_that_disappears_is_held_and_one_that_changes_is_taken_at_once() -> None:
    memory = step([node("a")], node_loss.Memory(), at=0).memory
    vanished = step([node("a", kernel=None)], memory, at=1)
    assert vanished.held[0].missing == (views.KERNEL_LABEL,)
    assert vanished.nodes[0].kernel == KERNEL
    changed = step([node("a", kernel="6.1.0-1")], memory, at=1)
    assert changed.held == ()
    assert changed.nodes[0].kernel == "6.1.0-1"
    both = step([node("a", gpu=False, kernel="6.1.0-1")], memory, at=1)
    assert both.nodes[0].kernel == "6.1.0-1" and both.nodes[0].labels[GPU] == "true"


def test_a_changed_selector_is_acted_on_at_once() -> None:
    memory = step([node("a")], node_loss.Memory(), at=0).memory
    other = node_loss.decide(
        [node("a")], memory, sr_name="gpu", selector={GPU: "false"}, grace=60, now=T0 + timedelta(seconds=1)
    )
    assert other.held == ()


def test_after_a_restart_a_marked_node_not_selected_is_held_from_now_with_its_recorded_kernel() -> None:
    marked = node(
        "a",
        gpu=False,
        kernel=None,
        extra={"gpu.sro.dev/state-driver": "ready"},
        annotations={lifecycle.kernel_annotation("gpu"): f"{KERNEL}|rhel9.4"},
    )
    held = step([marked, node("b", gpu=False)], node_loss.Memory(), at=100)
    assert [h.node for h in held.held] == ["a"]
    assert held.held[0].until == T0 + timedelta(seconds=160)
    assert held.nodes[0].kernel == KERNEL and held.nodes[0].labels[GPU] == "true"
    assert step([marked], held.memory, at=161).released == 1


def test_a_period_of_zero_holds_nothing() -> None:
    memory = step([node("a")], node_loss.Memory(), at=0, grace=0).memory
    assert step([node("a", gpu=False)], memory, at=1, grace=0).held == ()


def test_status_lists_held_nodes_soonest_first() -> None:
    memory = step([node("a"), node("b")], node_loss.Memory(), at=0).memory
    memory = step([node("a"), node("b", gpu=False)], memory, at=1).memory
    held = step([node("a", gpu=False), node("b", gpu=False)], memory, at=2)
    status = node_loss.with_held(
        {"observedGeneration": 1, "state": "", "phase": "", "ready": "", "conditions": []}, held.held
    )
    assert status["heldNodes"] == [
        {"node": "b", "until": "2026-01-01T00:01:01Z", "missingLabels": [GPU]},
        {"node": "a", "until": "2026-01-01T00:01:02Z", "missingLabels": [GPU]},
    ]
