"""Node patches built by ``plan.node_patches``: only what sro put there, and nothing of
anyone else's lost.

Covers: the taint patch adds and records sro's taints, removes only recorded ones, and
gives every other taint back exactly as the node had it (``timeAdded`` included, which the
API server sets on ``NoExecute`` taints and a rewrite must not drop); a node already right
needs no patch, a patch is needed exactly when a wanted taint is missing or a recorded
one is no longer wanted (``taints_change`` says the same without building it), and one
carried out leaves nothing to do; ``for_change`` carries labels, annotations and taints
in one patch; a taint record anyone wrote badly (not JSON, not a list, nested past the
decoder) reads as none, and a record reads the same whether short (parsed once) or long.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sro.model import views
from sro.plan import node_patches

pytestmark = pytest.mark.unit

SR = "gpu"
MINE = views.Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")
THEIRS = views.Taint(key="maintenance", effect="NoExecute", time_added="2026-11-24T10:00:00Z")


def node(*taints: views.Taint, recorded: tuple[views.Taint, ...] = (), rv: str = "7") -> views.NodeView:
    notes = {}
    if recorded:
        notes[node_patches.taints_annotation(SR)] = json.dumps([t.to_body() for t in recorded])
    return views.NodeView(name="n1", taints=taints, annotations=notes, resource_version=rv)


def test_adding_sros_taint_keeps_another_writers_taint_with_its_time_added() -> None:
    patch = node_patches.taint_patch(node(THEIRS), sr_name=SR, wanted=[MINE])
    assert patch is not None
    assert patch["spec"]["taints"] == [
        {"key": "maintenance", "effect": "NoExecute", "timeAdded": "2026-11-24T10:00:00Z"},
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
    ]
    assert patch["metadata"]["resourceVersion"] == "7"
    recorded = json.loads(patch["metadata"]["annotations"][node_patches.taints_annotation(SR)])
    assert recorded == [MINE.to_body()]


def test_removing_sros_taint_leaves_the_others_exactly_as_they_were() -> None:
    patch = node_patches.taint_patch(node(THEIRS, MINE, recorded=(MINE,)), sr_name=SR, wanted=[])
    assert patch is not None
    assert patch["spec"]["taints"] == [THEIRS.to_body()]
    assert patch["metadata"]["annotations"] == {node_patches.taints_annotation(SR): None}


def test_a_taint_that_was_there_before_sro_wanted_it_is_never_recorded_nor_removed() -> None:
    admins = views.Taint(key=MINE.key, value=MINE.value, effect=MINE.effect)
    assert node_patches.taint_patch(node(admins), sr_name=SR, wanted=[MINE]) is None
    assert node_patches.taint_patch(node(admins), sr_name=SR, wanted=[]) is None


def test_taints_compare_without_their_time_added() -> None:
    assert views.Taint(key="maintenance", effect="NoExecute") == THEIRS
    assert len({THEIRS, views.Taint(key="maintenance", effect="NoExecute", time_added="later")}) == 1


def test_a_taint_read_from_a_node_body_keeps_its_time_added() -> None:
    body = {"metadata": {"name": "n1"}, "spec": {"taints": [THEIRS.to_body()]}}
    (taint,) = views.NodeView.from_body(body).taints
    assert taint.time_added == "2026-11-24T10:00:00Z"


def test_one_patch_carries_labels_annotations_and_taints_and_none_when_nothing_changes() -> None:
    change = node_patches.NodeChange(node="n1", labels={"gpu.sro.dev/s": "ready"}, taints=(MINE,))
    patch = node_patches.for_change(node(), change, sr_name=SR)
    assert patch is not None
    assert patch["metadata"]["labels"] == {"gpu.sro.dev/s": "ready"}
    assert patch["spec"]["taints"] == [MINE.to_body()]
    done = views.NodeView(
        name="n1",
        labels={"gpu.sro.dev/s": "ready"},
        taints=(MINE,),
        annotations={node_patches.taints_annotation(SR): json.dumps([MINE.to_body()])},
    )
    assert node_patches.for_change(done, change, sr_name=SR) is None


@pytest.mark.parametrize(
    "raw",
    ["", "not json", '{"key": "x"}', "[" * 5000 + "]" * 5000, '[{"key": "a"}, 3, "b"]'],
)
def test_an_unreadable_taint_record_counts_as_no_taints_of_sros(raw: str) -> None:
    found = node_patches.owned_taints(
        views.NodeView(name="n1", annotations={node_patches.taints_annotation(SR): raw}), SR
    )
    assert [t.key for t in found] == (["a"] if raw.startswith('[{"key": "a"}') else [])


def test_a_taint_record_reads_the_same_short_or_long_and_read_again() -> None:
    short = node(recorded=(MINE,))
    padded = json.dumps([MINE.to_body(), *({"key": f"k{i}", "effect": "NoSchedule"} for i in range(100))])
    long = views.NodeView(name="n2", annotations={node_patches.taints_annotation(SR): padded})
    assert node_patches.owned_taints(short, SR) == node_patches.owned_taints(short, SR) == (MINE,)
    found = node_patches.owned_taints(long, SR)
    assert len(padded) > 1024 and len(found) == 101 and found[0] == MINE


OTHERS = (views.Taint(key="a", effect="NoSchedule"), views.Taint(key="a", value="v", effect="NoExecute"))
TAINTS = st.sampled_from([MINE, THEIRS, *OTHERS])


@given(st.lists(TAINTS, unique=True), st.lists(TAINTS, unique=True), st.lists(TAINTS))
def test_a_taint_patch_is_needed_exactly_when_a_wanted_taint_is_missing_or_a_recorded_one_unwanted(
    carried: list[views.Taint], recorded: list[views.Taint], wanted: list[views.Taint]
) -> None:
    before = node(*carried, recorded=tuple(recorded))
    patch = node_patches.taint_patch(before, sr_name=SR, wanted=wanted)
    needed = not set(wanted) <= set(carried) or not set(recorded) <= set(wanted)
    assert (patch is not None) == needed
    assert node_patches.taints_change(before, sr_name=SR, wanted=wanted) == needed
    if patch is None:
        return
    # Carried out, the patch leaves nothing more to do.
    record = patch["metadata"]["annotations"][node_patches.taints_annotation(SR)]
    back = patch["spec"]["taints"]
    after = views.NodeView(
        name="n1",
        taints=tuple(views.Taint(key=t["key"], value=t.get("value", ""), effect=t["effect"]) for t in back),
        annotations={node_patches.taints_annotation(SR): record} if record else {},
        resource_version="8",
    )
    assert node_patches.taint_patch(after, sr_name=SR, wanted=wanted) is None
    assert set(wanted) <= set(after.taints)
