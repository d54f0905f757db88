"""Wait-for-logs in the plan: a state waits until its pods' log tails match.

Covers the gate itself and the tails the plan asks for (a young pod's more often than
an old one's); an operator restarted over a walked node, which keeps the node's record
of the match (the state's label, and the annotation naming the matching pod) until it
reads the tail, trusts a record of the same pod without reading again, and resets the
later states when the tail read does not match or the record names another pod; the
label that completes a logged state recording its pod; a driver being replaced waiting
for its own tail; teardown taking the record off. Which tails a pass fetches is
``test_log_polls``'s subject, one object's verdict ``test_readiness_logs``'s.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from builders import (
    K1,
    SR,
    T0,
    bare_pod,
    ds,
    ds_pod,
    label,
    labels_of,
    live,
    node,
    node_pods,
    seen,
    states,
    wanted,
)

from sro.model import desired, views
from sro.plan import lifecycle, log_polls, planner, walk

pytestmark = pytest.mark.unit


def test_wait_for_logs_gates_the_state_and_asks_for_the_logs_it_needs() -> None:
    d = ds("driver", "state-driver", logs=r"driver loaded")
    pod = ds_pod(d, "n1")
    want = wanted(states("state-driver"), [d], ["n1"])
    without = planner.plan(want, seen([node("n1")], objects=[live(d)], pods=[pod]), now=T0)
    assert [r.uid for r in without.logs_needed] == [pod.uid]
    assert without.requeue_after == log_polls.LOG_POLL.total_seconds()
    assert without.status["phase"] == "Progressing"

    logs = {pod.uid: {"main": "loading\ndriver loaded\n"}}
    matched = planner.plan(want, seen([node("n1")], objects=[live(d)], pods=[pod], logs=logs), now=T0)
    assert matched.logs_needed == () and matched.requeue_after is None
    assert matched.status["phase"] == "Ready"


def restarted_world() -> tuple[desired.DesiredState, list[views.PodView]]:
    """A node through driver (waiting for its logs), validation and plugin, as a new
    operator process finds it: every label set, every pod there, no tail read yet."""
    driver = ds("driver", "state-driver", logs=r"driver loaded")
    validation = node_pods("validate", "state-validation", ["n1"])
    plugin = ds("plugin", "state-plugin")
    chain = states("state-driver", "state-validation", "state-plugin")
    want = wanted(chain, [driver, *validation, plugin], ["n1"])
    return want, [ds_pod(driver, "n1"), bare_pod(validation[0]), ds_pod(plugin, "n1")]


def walked_node(*names: str, matched: str = "") -> views.NodeView:
    """Node n1 as sro leaves it once ``names`` are complete there (``matched``: its record
    of the pods whose log matched)."""
    labels = {**{label(n): "ready" for n in names}, lifecycle.complete_label(SR): "true"}
    notes = {lifecycle.kernel_annotation(SR): K1.key}
    if matched:
        notes[lifecycle.logs_annotation(SR)] = matched
    return node("n1", labels, annotations=notes)


def test_a_restarted_operator_keeps_a_recorded_log_match_until_it_reads_the_tail() -> None:
    want, pods = restarted_world()
    labelled = walked_node("state-driver", "state-validation", "state-plugin")
    objects = [live(o) for o in want.objects]
    first = planner.plan(want, seen([labelled], objects=objects, pods=pods), now=T0)
    # Nothing reset, deleted or made again: the label is sro's record of the match ...
    assert first.node_labels == () and first.delete == ()
    assert [o.ref.name for o in first.apply if o.kind == "Pod"] == []
    assert first.status["phase"] == "Ready"
    # ... and the tail is read all the same.
    assert [r.uid for r in first.logs_needed] == [pods[0].uid]

    # Read, and matching: nothing more to ask.
    logs = {pods[0].uid: {"main": "driver loaded\n"}}
    read = planner.plan(want, seen([labelled], objects=objects, pods=pods, logs=logs), now=T0)
    assert read.logs_needed == () and read.node_labels == () and read.status["phase"] == "Ready"


def test_a_tail_read_without_the_match_resets_the_later_states_even_where_recorded() -> None:
    want, pods = restarted_world()
    labelled = walked_node("state-driver", "state-validation", "state-plugin")
    objects = [live(o) for o in want.objects]
    logs = {pods[0].uid: {"main": "still building\n"}}
    planned = planner.plan(want, seen([labelled], objects=objects, pods=pods, logs=logs), now=T0)
    assert planned.walk is not None
    assert planned.walk.nodes["n1"]["state-driver"].phase.value == "Progressing"
    assert labels_of(planned)["n1"][label("state-plugin")] is None
    assert [d.ref.name for d in planned.delete] == ["validate-n1"]


def test_an_unread_tail_on_a_node_without_the_label_waits_and_the_memo_sees_the_label_go() -> None:
    want, pods = restarted_world()
    labelled = walked_node("state-driver", "state-validation", "state-plugin")
    objects = [live(o) for o in want.objects]
    first = planner.plan(want, seen([labelled], objects=objects, pods=pods), now=T0)
    assert first.walk is not None
    # Someone takes the driver's label off; the tail is still unread: the walk must not
    # answer from its memory of the labelled node.
    bare = node("n1", {k: v for k, v in labelled.labels.items() if k != label("state-driver")})
    again = planner.plan(want, seen([bare], objects=objects, pods=pods, walk_memo=first.walk.memo), now=T0)
    assert again.walk is not None
    assert again.walk.nodes["n1"]["state-driver"].phase.value == "Progressing"
    assert "waiting for logs" in again.walk.nodes["n1"]["state-driver"].reason


def test_the_label_that_completes_a_logged_state_records_the_matching_pod_on_the_node() -> None:
    want, pods = restarted_world()
    fresh = node("n1", annotations={lifecycle.kernel_annotation(SR): K1.key})
    objects = [live(o) for o in want.objects]
    logs = {pods[0].uid: {"main": "building\ndriver loaded\n"}}
    planned = planner.plan(want, seen([fresh], objects=objects, pods=pods[:1], logs=logs), now=T0)
    (change,) = planned.node_labels
    assert change.labels[label("state-driver")] == "ready"
    assert change.annotations == {lifecycle.logs_annotation(SR): pods[0].uid}


def test_a_restart_trusts_the_recorded_match_without_reading_the_log_again() -> None:
    want, pods = restarted_world()
    noted = walked_node("state-driver", "state-validation", "state-plugin", matched=pods[0].uid)
    objects = [live(o) for o in want.objects]
    # The tail read since holds no match any more (the driver logged on): the record stands.
    for logs in ({}, {pods[0].uid: {"main": "heartbeat\n" * 3}}):
        planned = planner.plan(want, seen([noted], objects=objects, pods=pods, logs=logs), now=T0)
        assert planned.logs_needed == () and planned.node_labels == () and planned.delete == ()
        assert planned.status["phase"] == "Ready"


def test_a_record_of_another_pod_is_no_match_and_a_reset_takes_it_off() -> None:
    want, pods = restarted_world()
    noted = walked_node("state-driver", "state-validation", "state-plugin", matched="an-older-pod")
    objects = [live(o) for o in want.objects]
    # Replaced while no operator ran: the label the old pod earned proves nothing of the
    # new one, which waits for its own tail ...
    unread = planner.plan(want, seen([noted], objects=objects, pods=pods), now=T0)
    assert [r.uid for r in unread.logs_needed] == [pods[0].uid]
    assert unread.walk is not None
    assert unread.walk.nodes["n1"]["state-driver"].phase.value == "Progressing"
    # ... and without the match, the later states reset and the stale record goes with them.
    logs = {pods[0].uid: {"main": "still building\n"}}
    planned = planner.plan(want, seen([noted], objects=objects, pods=pods, logs=logs), now=T0)
    (change,) = planned.node_labels
    assert change.labels[label("state-plugin")] is None
    assert change.annotations == {lifecycle.logs_annotation(SR): None}


def test_removing_a_special_resource_takes_its_log_record_off_the_nodes() -> None:
    noted = node("n1", {label("state-driver"): "ready"}, annotations={lifecycle.logs_annotation(SR): "uid-1"})
    (change,) = lifecycle.strip_nodes(SR, [noted])
    assert change.annotations == {lifecycle.logs_annotation(SR): None}
    assert change.labels == {label("state-driver"): None}


@pytest.mark.parametrize(("age", "poll"), [(0.5, 1.0), (2.0, 1.0), (20.0, 5.0), (100.0, 10.0), (None, 10.0)])
def test_a_young_pod_s_log_is_fetched_often_an_old_one_every_ten_seconds(
    age: float | None, poll: float
) -> None:
    d = ds("driver", "state-driver", logs=r"driver loaded")
    created = "" if age is None else (T0 - timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%SZ")
    pod = replace(ds_pod(d, "n1"), created=created)
    want = wanted(states("state-driver"), [d], ["n1"])
    planned = planner.plan(want, seen([node("n1")], objects=[live(d)], pods=[pod]), now=T0)
    assert planned.requeue_after == pytest.approx(poll, abs=0.01)


def test_a_driver_being_replaced_waits_for_its_own_tail_even_under_the_old_label() -> None:
    want, pods = restarted_world()
    labelled = walked_node("state-driver", "state-validation", "state-plugin")
    objects = [live(o) for o in want.objects]
    observed_ = seen([labelled], objects=objects, pods=pods)
    kept = walk.walk(want, observed_)
    assert kept.nodes["n1"]["state-driver"].phase.value == "Complete"  # no record, not replacing
    replacing = walk.walk(want, observed_, upgrading=frozenset({"n1"}))
    assert replacing.nodes["n1"]["state-driver"].phase.value == "Progressing"
    assert "waiting for logs" in replacing.nodes["n1"]["state-driver"].reason
