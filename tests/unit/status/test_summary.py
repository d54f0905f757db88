"""The status body: the one-line state, phase, ready, conditions (and when their
``lastTransitionTime`` moves), node/kernel/state rows, failingNodes, the builders for
errors, management states and no nodes, and ``status_changed``.

Walk results are written by hand here; how they are computed is tested under reconcile.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sro.model import crd_limits, desired, progress
from sro.status import conditions, rows, summary

pytestmark = pytest.mark.unit

T0 = datetime(2026, 11, 22, 6, 0, 0, tzinfo=UTC)
RHEL = desired.OsRelease(id="rhel", version_id="9.4")
K1 = desired.KernelGroup(kernel="5.14.0-427.el9.x86_64", os=RHEL)
K2 = desired.KernelGroup(kernel="5.14.0-503.el9.x86_64", os=RHEL)
STATES = ("state-driver", "state-validation")

Phase = progress.Phase
DONE = progress.NodeState(phase=Phase.COMPLETE)


def ns(phase: progress.Phase, reason: str = "", *, stuck: bool = False) -> progress.NodeState:
    return progress.NodeState(phase=phase, reason=reason, stuck=stuck)


def wanted(nodes: list[str], groups: dict[str, desired.KernelGroup] | None = None) -> desired.DesiredState:
    return desired.DesiredState(
        sr_name="gpu",
        namespace="gpu",
        recipe="nvidia-gpu",
        states=(desired.StateSpec(name=STATES[0]), desired.StateSpec(name=STATES[1], after=(STATES[0],))),
        objects=(),
        nodes=tuple(nodes),
        kernel_groups=groups or dict.fromkeys(nodes, K1),
    )


def status(
    per_node: dict[str, dict[str, progress.NodeState]],
    *,
    previous: dict | None = None,
    now: datetime = T0,
    groups: dict[str, desired.KernelGroup] | None = None,
) -> dict:
    walked = progress.Walk(order=STATES, nodes=per_node)
    return summary.status_from_walk(
        wanted(sorted(per_node), groups),
        walked,
        previous=previous or {},
        generation=3,
        recipe_source="built-in",
        now=now,
    )


def all_done(count: int) -> dict[str, dict[str, progress.NodeState]]:
    return {f"n{i:02}": dict.fromkeys(STATES, DONE) for i in range(count)}


def cond(body: dict, kind: str) -> dict:
    found = conditions.find(body["conditions"], kind)
    assert found is not None
    return dict(found)


def test_every_state_complete_everywhere_is_ready() -> None:
    body = status(all_done(50))
    assert body["state"] == "Ready: 50/50 nodes"
    assert (body["phase"], body["ready"], body["observedGeneration"]) == ("Ready", "50/50", 3)
    assert cond(body, "Ready")["status"] == "True" and cond(body, "Ready")["reason"] == "AllStatesComplete"
    assert cond(body, "Progressing")["status"] == "False"
    assert cond(body, "Degraded") | {"lastTransitionTime": ""} == {
        "type": "Degraded",
        "status": "False",
        "reason": "AsExpected",
        "message": "",
        "lastTransitionTime": "",
        "observedGeneration": 3,
    }
    assert body["nodes"] == {"selected": 50, "complete": 50}
    assert body["recipe"] == {"name": "nvidia-gpu", "source": "built-in"}
    assert [r["phase"] for r in body["states"]] == ["Complete", "Complete"]


def test_progress_names_the_first_state_not_complete_everywhere() -> None:
    nodes = all_done(3)
    nodes["n01"] = {STATES[0]: DONE, STATES[1]: ns(Phase.PROGRESSING, "pod validate-n01 is Running")}
    nodes["n02"] = {STATES[0]: ns(Phase.PROGRESSING, "pod x not ready"), STATES[1]: ns(Phase.PENDING, "w")}
    body = status(nodes)
    assert body["state"] == "Progressing: state-driver 2/3 nodes"
    assert body["ready"] == "1/3"
    assert cond(body, "Ready")["reason"] == "StateProgressing"
    assert cond(body, "Progressing") | {"lastTransitionTime": ""} == {
        "type": "Progressing",
        "status": "True",
        "reason": "StateProgressing",
        "message": "1/3 nodes complete",
        "lastTransitionTime": "",
        "observedGeneration": 3,
    }
    rows = {r["name"]: r for r in body["states"]}
    assert rows[STATES[0]]["message"] == "n02: pod x not ready"
    assert rows[STATES[1]] == {
        "name": STATES[1],
        "phase": "Progressing",
        "nodes": {"complete": 1, "total": 3},
        "message": "n01: pod validate-n01 is Running (and 1 more node)",
        "failingNodes": [],
    }


def test_a_stuck_node_is_named_first_in_the_states_message() -> None:
    nodes = {
        "a": {STATES[0]: ns(Phase.PROGRESSING, "pod not ready"), STATES[1]: ns(Phase.PENDING, "w")},
        "b": {
            STATES[0]: ns(Phase.PROGRESSING, "ImagePullBackOff (pod d-b)", stuck=True),
            STATES[1]: ns(Phase.PENDING),
        },
    }
    row = status(nodes)["states"][0]
    assert row["message"] == "b: ImagePullBackOff (pod d-b) (and 1 more node)"


def test_a_state_pending_on_every_node_is_pending() -> None:
    waiting = ns(Phase.PENDING, "waiting for state-driver")
    nodes = {"a": {STATES[0]: ns(Phase.PROGRESSING, "x"), STATES[1]: waiting}}
    rows = status(nodes)["states"]
    assert [r["phase"] for r in rows] == ["Progressing", "Pending"]
    assert rows[1]["message"] == "a: waiting for state-driver"


def test_a_failed_node_degrades_and_is_named() -> None:
    nodes = all_done(3)
    nodes["n01"] = {STATES[0]: DONE, STATES[1]: ns(Phase.FAILED, "Error (exit code 1)")}
    body = status(nodes)
    assert body["state"] == "Degraded: StateFailed on 1 node (n01: Error (exit code 1))"
    assert body["phase"] == "Degraded"
    assert cond(body, "Degraded")["reason"] == "StateFailed"
    assert cond(body, "Degraded")["message"] == "state-validation failed on n01: Error (exit code 1)"
    assert cond(body, "Ready")["status"] == "False" and cond(body, "Ready")["reason"] == "StateFailed"
    assert cond(body, "Progressing")["status"] == "False"
    row = body["states"][1]
    assert row["phase"] == "Failed" and row["message"] == "failed on 1 node"
    assert row["failingNodes"] == [{"node": "n01", "reason": "Error (exit code 1)"}]


def test_failing_nodes_are_capped_at_ten_first_by_name() -> None:
    names = [f"node-{c}" for c in "mlkjihgfedcba"]  # 13 nodes, given out of order
    nodes = {n: {STATES[0]: ns(Phase.FAILED, f"boom {n}"), STATES[1]: ns(Phase.PENDING)} for n in names}
    body = status(nodes)
    failing = body["states"][0]["failingNodes"]
    assert [f["node"] for f in failing] == sorted(names)[:10]
    assert body["state"] == "Degraded: StateFailed on 13 nodes (node-a: boom node-a, and 12 more nodes)"


def test_kernel_rows_count_selected_nodes_per_group_sorted() -> None:
    groups = {"a": K2, "b": K1, "c": K2}
    body = status({n: dict.fromkeys(STATES, DONE) for n in groups}, groups=groups)
    assert body["kernels"] == [
        {"kernel": K1.kernel, "os": "rhel9.4", "nodes": 1},
        {"kernel": K2.kernel, "os": "rhel9.4", "nodes": 2},
    ]


def test_last_transition_time_moves_only_when_a_condition_flips() -> None:
    progressing = all_done(2)
    progressing["n00"] = {STATES[0]: DONE, STATES[1]: ns(Phase.PROGRESSING, "x")}
    first = status(progressing)
    stamp = conditions.timestamp(T0)
    assert {c["lastTransitionTime"] for c in first["conditions"]} == {stamp}

    later = T0 + timedelta(minutes=5)
    still = status(progressing, previous=first, now=later)  # same statuses: times kept
    assert [c["lastTransitionTime"] for c in still["conditions"]] == [stamp] * 3

    done = status(all_done(2), previous=still, now=later)  # Ready and Progressing flip
    times = {c["type"]: c["lastTransitionTime"] for c in done["conditions"]}
    moved = conditions.timestamp(later)
    assert times == {"Ready": moved, "Progressing": moved, "Degraded": stamp}


def test_a_reason_change_without_a_flip_keeps_the_time() -> None:
    previous = [{"type": "Ready", "status": "False", "reason": "StateProgressing", "lastTransitionTime": "x"}]
    wanted = [conditions.Condition(type="Ready", status=False, reason="StateFailed")]
    merged = conditions.merge(previous, wanted, generation=1, now=T0)
    assert merged[0]["lastTransitionTime"] == "x"
    assert merged[0]["reason"] == "StateFailed"


def test_an_error_status_degrades_with_its_reason_and_keeps_the_rows() -> None:
    before = status(all_done(2))
    body = summary.status_for_error(
        before,
        reason="TemplateError",
        message="state-driver/ds.yaml:3: 'x' is undefined\nmore",
        generation=4,
        now=T0,
    )
    assert body["state"] == "Degraded: TemplateError: state-driver/ds.yaml:3: 'x' is undefined more"
    assert cond(body, "Degraded")["reason"] == "TemplateError" and cond(body, "Degraded")["status"] == "True"
    assert cond(body, "Ready")["reason"] == "TemplateError" and cond(body, "Ready")["status"] == "False"
    assert body["states"] == before["states"] and body["ready"] == "2/2"
    assert body["observedGeneration"] == 4
    with pytest.raises(ValueError, match="not a Degraded reason"):
        summary.status_for_error(before, reason="Oops", message="", generation=4, now=T0)


def test_an_error_keeps_the_rollouts_row() -> None:
    # Dropped for one pass, a rolled-back rollout's row would come back as news and its
    # rollback would be reported twice.
    before = {**status(all_done(2)), "upgrade": {"phase": "RolledBack", "revision": "abc"}}
    body = summary.status_for_error(before, reason="ApplyFailed", message="m", generation=4, now=T0)
    assert body.get("upgrade") == {"phase": "RolledBack", "revision": "abc"}
    kept = summary.degraded(before, before, reason="ApplyFailed", message="m", generation=4, now=T0)
    assert kept.get("upgrade") == before["upgrade"]


@pytest.mark.parametrize("reason", sorted(conditions.ERROR_REASONS))
def test_every_contract_reason_is_accepted_for_an_error_status(reason: str) -> None:
    body = summary.status_for_error({}, reason=reason, message="m", generation=1, now=T0)
    assert body["phase"] == "Degraded" and cond(body, "Degraded")["reason"] == reason


def test_unmanaged_and_removed_say_so_in_ready() -> None:
    before = status(all_done(2))
    unmanaged = summary.status_for_management(before, state="Unmanaged", generation=5, now=T0)
    assert unmanaged["phase"] == "Unmanaged" and cond(unmanaged, "Ready")["reason"] == "Unmanaged"
    assert unmanaged["states"] == before["states"]
    removing = summary.status_for_management(before, state="Removed", generation=5, now=T0, remaining=3)
    assert removing["state"] == "Removed: removing 3 items"
    assert cond(removing, "Ready")["reason"] == "Removed" and removing["states"] == []


def test_no_matching_nodes_is_ready_false_with_that_reason() -> None:
    body = summary.status_no_nodes({}, wanted=wanted([]), generation=2, recipe_source="configmap", now=T0)
    assert cond(body, "Ready")["reason"] == "NoMatchingNodes" and cond(body, "Ready")["status"] == "False"
    assert body["phase"] == "NoNodes" and body["ready"] == "0/0"
    assert [r["phase"] for r in body["states"]] == ["Pending", "Pending"]
    assert body["recipe"]["source"] == "configmap"


def test_status_changed_ignores_key_order_and_nothing_else() -> None:
    a = {"state": "Ready: 1/1 nodes", "nodes": {"selected": 1, "complete": 1}}
    b = {"nodes": {"complete": 1, "selected": 1}, "state": "Ready: 1/1 nodes"}
    assert not summary.status_changed(a, b)
    assert summary.status_changed(a, {**b, "nodes": {"complete": 0, "selected": 1}})
    assert summary.status_changed(None, a)
    assert summary.status_changed({"kernels": [1, 2]}, {"kernels": [2, 1]})


def test_the_same_walk_gives_the_same_status() -> None:
    first = status(all_done(4))
    assert not summary.status_changed(first, status(all_done(4), previous=first, now=T0 + timedelta(hours=1)))


def test_an_error_over_a_moving_walk_keeps_progressing_and_the_fresh_rows() -> None:
    nodes = all_done(2)
    nodes["n00"] = {STATES[0]: DONE, STATES[1]: ns(Phase.PROGRESSING, "x")}
    before = status(all_done(2))
    walked = status(nodes, previous=before)
    body = summary.status_for_error(
        before, reason="DependencyMissing", message="ofed misses n00", generation=3, now=T0, current=walked
    )
    assert cond(body, "Progressing")["status"] == "True"
    assert cond(body, "Degraded")["reason"] == "DependencyMissing"
    assert body["states"] == walked["states"] and body["ready"] == "1/2"


def test_long_texts_are_clipped_to_the_crds_bounds() -> None:
    huge = "x" * 50_000
    body = summary.status_for_error({}, reason="ApplyFailed", message=huge, generation=1, now=T0)
    assert len(body["state"]) == crd_limits.STATE_LINE_MAX and body["state"].endswith("...")
    assert len(cond(body, "Degraded")["message"]) == conditions.MESSAGE_MAX
    nodes = {"a": {STATES[0]: ns(Phase.FAILED, huge), STATES[1]: ns(Phase.PENDING)}}
    row = status(nodes)["states"][0]
    assert len(row["failingNodes"][0]["reason"]) == rows.REASON_MAX
    waiting = {"a": {STATES[0]: ns(Phase.PROGRESSING, huge), STATES[1]: ns(Phase.PENDING)}}
    assert len(status(waiting)["states"][0]["message"]) == rows.ROW_MESSAGE_MAX


def test_state_rows_follow_recipe_order_even_when_an_after_points_forward() -> None:
    forward = desired.DesiredState(
        sr_name="gpu",
        namespace="gpu",
        recipe="r",
        states=(desired.StateSpec(name="b", after=("a",)), desired.StateSpec(name="a")),
        objects=(),
        nodes=("n1",),
        kernel_groups={"n1": K1},
    )
    walked = progress.Walk(
        order=("a", "b"),
        nodes={"n1": {"a": ns(Phase.PROGRESSING, "x"), "b": ns(Phase.PENDING, "waiting for a")}},
    )
    body = summary.status_from_walk(
        forward, walked, previous={}, generation=1, recipe_source="built-in", now=T0
    )
    assert [r["name"] for r in body["states"]] == ["b", "a"]
    assert body["state"] == "Progressing: a 0/1 nodes"


@given(
    st.dictionaries(
        st.text("abcn0123456789", min_size=1, max_size=4),
        st.tuples(st.sampled_from(list(Phase)), st.booleans(), st.sampled_from(list(Phase)), st.booleans()),
        min_size=1,
        max_size=30,
    )
)
def test_a_walk_that_noted_its_stuck_nodes_names_the_same_first_waiting_node_as_reading_every_node(
    drawn: dict[str, tuple[progress.Phase, bool, progress.Phase, bool]],
) -> None:
    nodes = {
        name: {
            STATES[0]: ns(p0, f"r0 {name}", stuck=s0 and p0 is Phase.PROGRESSING),
            STATES[1]: ns(p1, f"r1 {name}", stuck=s1 and p1 is Phase.PROGRESSING),
        }
        for name, (p0, s0, p1, s1) in sorted(drawn.items())
    }
    stuck_first: dict[str, str] = {}
    for name in reversed(nodes):  # any order: the first by name is kept
        for state, node_state in nodes[name].items():
            if node_state.stuck and (state not in stuck_first or name < stuck_first[state]):
                stuck_first[state] = name
    by_hand = progress.Walk(order=STATES, nodes=nodes)
    noted = progress.Walk(order=STATES, nodes=nodes, stuck_first=stuck_first, by_name=True)
    for state in STATES:
        assert noted.first_waiting(state) == by_hand.first_waiting(state)
