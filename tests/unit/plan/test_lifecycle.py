"""Lifecycle decisions alone: label keys and their validity, the node patch, kernel-change
detection, stale objects, and what counts as left over at teardown.

Whole-plan scenarios (kernel moves, retries, departures) are in ``test_plan_departures``
and ``test_plan_retries``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from builders import (
    K1,
    K2,
    NS,
    SR,
    T0,
    bare_pod,
    ds,
    ds_pod,
    live,
    node,
    node_pods,
    obj,
    seen,
    states,
    wanted,
)

from sro import errors
from sro.model import progress, views
from sro.plan import inputs, lifecycle, node_patches, resets, teardown, walk

pytestmark = pytest.mark.unit


def test_state_labels_are_keyed_under_the_srs_prefix() -> None:
    assert lifecycle.state_label("nvidia-gpu", "state-driver") == "nvidia-gpu.sro.dev/state-driver"
    assert lifecycle.complete_label("nvidia-gpu") == "nvidia-gpu.sro.dev/complete"


@pytest.mark.parametrize(
    ("sr", "state"),
    [("gpu", "x" * 64), ("gpu", "-leading-dash"), ("gpu", "has space"), ("Upper", "state"), ("a" * 64, "s")],
)
def test_a_state_or_sr_name_that_makes_no_valid_label_key_is_a_recipe_error(sr: str, state: str) -> None:
    with pytest.raises(errors.RecipeInvalid, match="not a valid label key"):
        lifecycle.state_label(sr, state)


def test_the_longest_allowed_names_still_make_valid_keys() -> None:
    key = lifecycle.state_label("s" * 40, "t" * 40)
    assert len(key.split("/")[1]) == 40


def test_a_node_change_patches_only_labels_and_annotations() -> None:
    change = node_patches.NodeChange(node="n1", labels={"a": "ready", "b": None}, annotations={"c": None})
    assert change.patch() == {"metadata": {"labels": {"a": "ready", "b": None}, "annotations": {"c": None}}}


def test_a_node_whose_kernel_group_differs_from_the_recorded_one_is_reset() -> None:
    key = lifecycle.kernel_annotation(SR)
    want = wanted(states("s"), [], ["n1", "n2", "n3"], groups={"n1": K1, "n2": K2, "n3": K2})
    view = seen([node("n1", annotations={key: K1.key}), node("n2", annotations={key: K1.key}), node("n3")])
    assert resets.kernel_resets(want, view) == frozenset({"n2"})  # n3 has no record yet: no reset


def test_a_reset_node_is_pending_everywhere_and_loses_its_labels() -> None:
    d = ds("driver", "s")
    key = lifecycle.kernel_annotation(SR)
    labelled = node("n1", labels={lifecycle.state_label(SR, "s"): "ready"}, annotations={key: K1.key})
    want = wanted(states("s"), [d], ["n1"], groups={"n1": K2})
    view = seen([labelled], objects=[live(d)], pods=[ds_pod(d, "n1")])
    walked = walk.walk(want, view, reset=resets.kernel_resets(want, view))
    assert walked.nodes["n1"]["s"].phase is progress.Phase.PENDING
    assert walked.nodes["n1"]["s"].reason == walk.RESET_REASON
    (change,) = lifecycle.node_changes(want, view, walked).changes
    assert change.labels == {lifecycle.state_label(SR, "s"): None}
    assert change.annotations == {key: K2.key}


def test_objects_not_desired_are_stale_unless_already_going_or_made_by_a_controller() -> None:
    keep, old, going = ds("keep", "s"), ds("old", "s"), ds("going", "s")
    ds_made = obj("Pod", "keep-n1", "s")
    controller_pod = ds_pod(keep, "n1")
    want = wanted(states("s"), [keep], ["n1"])
    view = seen(
        [node("n1")],
        objects=[live(keep), live(old), live(going, deleting=True), live(ds_made)],
        pods=[controller_pod],
    )
    assert [(d.ref.name, d.uid) for d in lifecycle.stale_objects(want, view)] == [("old", "uid-old")]


def test_teardown_counts_objects_being_deleted_as_not_yet_gone() -> None:
    pod = node_pods("validate", "s", ["n1"])[0]
    view = seen([node("n1")], objects=[live(pod, deleting=True)], pods=[bare_pod(pod)])
    down = teardown.teardown(sr_name=SR, seen=view, now=T0)
    assert down.delete == ()
    assert not down.done


def _deleted(seconds_ago: float) -> str:
    return (T0 - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_namespace_being_deleted_with_nothing_of_sros_left_holds_the_teardown_only_a_while() -> None:
    # The API server empties it in seconds; what holds it longer (a tenant's object with
    # its own finalizer) is not sro's to wait for.
    ns = obj("Namespace", NS, "s", namespace="", api_version="v1")
    recent = live(ns, deleting=True, deleted_at=_deleted(5))
    down = teardown.teardown(sr_name=SR, seen=seen([node("n1")], objects=[recent]), now=T0)
    assert down.delete == () and not down.done
    held = live(ns, deleting=True, deleted_at=_deleted(teardown.NAMESPACE_RELEASE.total_seconds()))
    down = teardown.teardown(sr_name=SR, seen=seen([node("n1")], objects=[held]), now=T0)
    assert down.delete == () and down.done


def test_a_namespace_being_deleted_still_holding_an_object_of_sros_holds_the_teardown() -> None:
    ns = obj("Namespace", NS, "s", namespace="", api_version="v1")
    config = obj("ConfigMap", "c", "s", api_version="v1")
    old = _deleted(3600)
    view = seen([node("n1")], objects=[live(ns, deleting=True, deleted_at=old), live(config, deleting=True)])
    assert not teardown.teardown(sr_name=SR, seen=view, now=T0).done
    standing = teardown.teardown(sr_name=SR, seen=seen([node("n1")], objects=[live(ns)]), now=T0)
    assert [d.ref for d in standing.delete] == [ns.ref] and not standing.done


def test_teardown_removes_only_this_srs_labels_and_recorded_taints() -> None:
    mine = views.Taint(key="gpu", value="present")
    admins = views.Taint(key="dedicated", value="ml")
    record = {"sro.dev/taints.gpu": '[{"effect": "NoSchedule", "key": "gpu", "value": "present"}]'}
    labels = {"gpu.sro.dev/s": "ready", "other.sro.dev/s": "ready", "kubernetes.io/os": "linux"}
    carrying = views.NodeView(name="n1", labels=labels, taints=(mine, admins), annotations=record)
    down = teardown.teardown(sr_name=SR, seen=seen([carrying]), now=T0)
    (change,) = down.node_changes
    assert change.labels == {"gpu.sro.dev/s": None}
    assert change.taints == ()
    assert not down.done


@pytest.mark.parametrize(
    ("annotation", "value"),
    [
        (lifecycle.logs_annotation(SR), "uid-1"),
        (lifecycle.kernel_annotation(SR), "5.14.0-427|rhel9.4"),
        (lifecycle.upgrade_annotation(SR), '{"target": "550"}'),  # no cordon recorded
        (node_patches.taints_annotation(SR), "not json"),  # unreadable: no taint to take off
    ],
)
def test_a_node_with_only_one_record_left_still_carries_the_special_resource_and_loses_it(
    annotation: str, value: str
) -> None:
    bare = views.NodeView(name="n1", annotations={annotation: value, "admin/note": "keep"})
    assert inputs.departed(SR, [bare], selected=frozenset()) == (bare,)
    assert inputs.carrying(SR, [bare], ()) == (bare,)
    (change,) = lifecycle.strip_nodes(SR, [bare])
    assert change.annotations == {annotation: None}
    assert change.taints is None and change.unschedulable is None
    patch = node_patches.for_change(bare, change, sr_name=SR)
    assert patch == {"metadata": {"annotations": {annotation: None}}}


def test_an_upgrade_record_nested_past_the_decoder_is_stripped_and_the_cordon_left_to_its_owner() -> None:
    deep = "[" * 100_000 + "]" * 100_000  # json.loads raises RecursionError, not ValueError
    cordoned = views.NodeView(
        name="n1", unschedulable=True, annotations={lifecycle.upgrade_annotation(SR): deep}
    )
    assert not lifecycle.cordoned_by_sro(cordoned, SR)
    (change,) = lifecycle.strip_nodes(SR, [cordoned])
    assert change.annotations == {lifecycle.upgrade_annotation(SR): None}
    assert change.unschedulable is None  # no record of sro's cordon: not sro's to undo


def test_the_node_marks_are_every_annotation_of_the_special_resource_and_no_other() -> None:
    marks = lifecycle.node_marks(SR)
    assert len(set(marks)) == 4
    assert all(m.startswith("sro.dev/") and m.endswith(f".{SR}") for m in marks)
    assert set(marks).isdisjoint(lifecycle.node_marks("other"))
