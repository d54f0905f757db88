"""``finish``: the end of a managed pass, after the writes reported what they did.

Covers the precedence of what outranks the walked status (a refused write, a transient
failure past its bound, a dependency, a conflict), retry messages on the rows, the Events
that follow from the final status, when to look again, and the run of transient failures
handed to the next pass. Also the plan outputs the engine executes without deciding:
the states a refusal blocks, labels held back, refused passes.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from builders import SR, T0, World, ds, ds_pod, label, live, node, node_pods, seen, states, wanted

from sro import errors
from sro.plan import conflicts, dependencies, finish, lifecycle, node_patches, outcomes, planner
from sro.status import events, summary

pytestmark = pytest.mark.unit

NODES = ("n1", "n2", "n3")
LINEAR = states("state-driver", "state-validation", "state-device-plugin")


def settled() -> World:
    world = World(
        desired=wanted(
            LINEAR,
            [
                ds("driver", "state-driver"),
                *node_pods("validate", "state-validation", NODES),
                ds("plugin", "state-device-plugin"),
            ],
            NODES,
        ),
        nodes={n: node(n) for n in NODES},
    )
    world.settle()
    return world


def refused_write(state: str = "state-driver") -> outcomes.Failure:
    error = errors.Invalid("spec.template: field not declared", code=422, reason="Invalid")
    return outcomes.Failure(state=state, ref=None, error=error)


def flaky(state: str = "state-driver") -> outcomes.Failure:
    return outcomes.Failure(state=state, ref=None, error=errors.TransportError("connection reset"))


CONFLICT = conflicts.ConflictReport(lost_to={"gpu-b": ("n9",)})
MISSING = dependencies.DependencyReport(absent=("base",), waiting=frozenset({"n1"}))


def run(
    world: World,
    *,
    failures: tuple[outcomes.Failure, ...] = (),
    peers: finish.Peers | None = None,
    transient: finish.Transient | None = None,
    now=T0,
) -> finish.Finished:
    planned = planner.plan(world.desired, world.observe(), now=now)
    return finish.finish(
        planned,
        finish.Outcomes(failures=failures),
        previous=world.status,
        peers=peers or finish.Peers(),
        transient=transient,
        generation=1,
        now=now,
    )


def test_a_clean_pass_keeps_the_plans_status_and_events_and_sets_no_requeue() -> None:
    world = settled()
    planned = planner.plan(world.desired, world.observe(), now=T0)
    done = finish.finish(
        planned,
        finish.Outcomes(),
        previous=world.status,
        peers=finish.Peers(),
        transient=None,
        generation=1,
        now=T0,
    )
    assert done.status is planned.status and done.events == planned.events
    assert done.requeue_after is None and done.transient is None


def test_a_conflict_overlays_degraded_on_the_walk_once_and_then_stays_quiet() -> None:
    world = settled()
    first = run(world, peers=finish.Peers(conflict=CONFLICT))
    assert first.status["state"] == f"Degraded: ConflictingNodeSelector: {CONFLICT.message()}"
    assert first.status["states"] == world.status["states"]  # the walked rows, still true
    assert [e.reason for e in first.events] == [events.CONFLICT_FOUND]
    world.status = first.status
    again = run(world, peers=finish.Peers(conflict=CONFLICT), now=T0.replace(hour=8))
    assert again.events == ()
    assert not summary.status_changed(first.status, again.status)


def test_a_refused_write_outranks_a_missing_dependency_which_outranks_a_conflict() -> None:
    world = settled()
    both = finish.Peers(conflict=CONFLICT, deps=MISSING)
    assert (
        run(world, failures=(refused_write(),), peers=both).status["conditions"][2]["reason"] == "ApplyFailed"
    )
    assert run(world, peers=both).status["phase"] == "Degraded"
    assert "DependencyMissing" in run(world, peers=both).status["state"]
    assert "ConflictingNodeSelector" in run(world, peers=finish.Peers(conflict=CONFLICT)).status["state"]


def test_a_refused_write_looks_again_after_the_recipe_recheck() -> None:
    done = run(settled(), failures=(refused_write(),))
    assert done.requeue_after == planner.RECIPE_RECHECK
    assert done.transient is None


def test_a_transient_failure_is_retried_with_backoff_and_shown_on_its_row_but_not_degraded() -> None:
    world = settled()
    first = run(world, failures=(flaky("state-validation"),))
    assert first.status["phase"] == "Ready"
    rows = {r["name"]: r["message"] for r in first.status["states"]}
    assert rows["state-validation"].startswith("retrying: state-validation: node failed: connection reset")
    assert first.transient is not None
    assert first.transient.since == T0 and first.transient.attempts == 1
    assert first.requeue_after == 2.0
    second = run(
        world, failures=(flaky("state-validation"),), transient=first.transient, now=T0 + timedelta(seconds=2)
    )
    assert second.transient is not None
    assert second.transient.since == T0 and second.transient.attempts == 2 and second.requeue_after == 4.0


def test_a_transient_failure_past_its_bound_becomes_apply_failed_and_a_clean_pass_forgets_it() -> None:
    world = settled()
    since = finish.Transient(failing={flaky().key: (T0, 9)})
    later = T0 + timedelta(seconds=finish.TRANSIENT_BOUND + 1)
    expired = run(world, failures=(flaky(),), transient=since, now=later)
    assert expired.status["state"].startswith("Degraded: ApplyFailed: failing since 06:00:00Z:")
    assert expired.requeue_after == 30.0  # the backoff's cap
    assert run(world, transient=since, now=later).transient is None


def test_other_nodes_meeting_a_conflict_in_every_pass_is_churn_not_a_failure_that_persists() -> None:
    """A large fleet's heartbeats race a few of sro's guarded node patches in nearly every
    pass, each time on other nodes: for ten minutes of that the SpecialResource stays
    Ready, each pass backs off as for a first failure, and only one node failing in every
    pass past the bound makes it Degraded, naming that node alone."""
    world = settled()

    def conflict(node: str) -> outcomes.Failure:
        error = errors.Conflict("the object has been modified", code=409, reason="Conflict")
        return outcomes.Failure(state=f"node {node}", ref=None, error=error)

    transient = None
    for i in range(120):  # a pass every 5 s, two other nodes each time
        now = T0 + timedelta(seconds=5 * i)
        done = run(world, failures=(conflict(f"n{i}"), conflict(f"m{i}")), transient=transient, now=now)
        assert done.status["phase"] == "Ready", f"pass {i}"
        assert done.requeue_after == 2.0
        transient = done.transient
    stuck = None
    for i in range(40):  # now one node fails in every pass, beside the churn
        now = T0 + timedelta(seconds=600 + 5 * i)
        stuck = run(world, failures=(conflict("n-stuck"), conflict(f"x{i}")), transient=transient, now=now)
        transient = stuck.transient
        if i * 5 <= finish.TRANSIENT_BOUND:
            assert stuck.status["phase"] == "Ready", f"{i * 5} s into n-stuck's failures"
    assert stuck is not None and stuck.status["phase"] == "Degraded"
    assert "node n-stuck" in stuck.status["state"] and "x39" not in stuck.status["state"]
    assert stuck.status["state"].startswith("Degraded: ApplyFailed: failing since 06:10:00Z:")


def test_a_missing_dependency_names_the_waiting_nodes_on_the_first_unfinished_row() -> None:
    world = World(
        desired=wanted(LINEAR, [ds("driver", "state-driver")], NODES), nodes={n: node(n) for n in NODES}
    )
    done = run(world, peers=finish.Peers(deps=MISSING))
    row = done.status["states"][0]
    assert row["message"].startswith("n1: waiting for SpecialResource base, which is missing")


def test_a_state_blocks_every_state_after_it_and_their_ready_labels_are_held_back() -> None:
    chain = states("a", "b", ("c", ["a"]), ("d", ["c"]))
    assert lifecycle.downstream(chain) == {
        "a": frozenset({"b", "c", "d"}),
        "b": frozenset(),
        "c": frozenset({"d"}),
        "d": frozenset(),
    }
    change = node_patches.NodeChange(
        node="n1",
        labels={label("a"): "ready", label("c"): "ready", label("b"): None, f"{SR}.sro.dev/complete": "true"},
    )
    (held,) = lifecycle.held_back([change], sr_name=SR, blocked=frozenset({"c"}))
    assert held.labels == {label("a"): "ready", label("b"): None}


def test_states_written_for_the_first_time_are_the_plans_opening_ones() -> None:
    driver, plugin = ds("driver", "state-driver"), ds("plugin", "state-device-plugin")
    want = wanted(states("state-driver", ("state-device-plugin", ["state-driver"])), [driver, plugin], ["n1"])
    first = planner.plan(want, seen([node("n1")]), now=T0)
    assert first.opening == frozenset({"state-driver"})
    ready = seen(
        [node("n1", {label("state-driver"): "ready"})], objects=[live(driver)], pods=[ds_pod(driver, "n1")]
    )
    assert planner.plan(want, ready, now=T0).opening == frozenset({"state-device-plugin"})


def test_a_refused_pass_keeps_the_stored_rows_and_looks_again_unless_told_not_to() -> None:
    world = settled()
    p = planner.plan_refused(
        previous=world.status, reason="RecipeInvalid", message="r/s/a.yaml:3: bad", generation=2, now=T0
    )
    assert p.status["state"] == "Degraded: RecipeInvalid: r/s/a.yaml:3: bad"
    assert p.status["states"] == world.status["states"]
    assert p.apply == () and p.delete == () and p.node_labels == ()
    assert p.requeue_after == planner.RECIPE_RECHECK
    assert (
        planner.plan_refused(
            previous={}, reason="RecipeInvalid", message="x", generation=1, now=T0, recheck=False
        ).requeue_after
        is None
    )


def test_teardown_looks_again_until_nothing_is_left() -> None:
    world = settled()
    down = planner.plan_teardown(sr_name=SR, seen=world.observe(), generation=1, now=T0)
    assert not down.finalizer_removable and down.requeue_after == planner.TEARDOWN_POLL
    empty = planner.plan_teardown(sr_name=SR, seen=seen([]), generation=1, now=T0)
    assert empty.finalizer_removable and empty.requeue_after is None
    assert isinstance(empty.status["state"], str)


def test_a_drop_in_directory_recipe_is_looked_at_again_every_recheck() -> None:
    world = settled()
    p = planner.plan(world.desired, world.observe(), now=T0)
    assert p.requeue_after is None
    again = planner.plan(world.desired, replace(world.observe(), recipe_source="directory"), now=T0)
    assert again.requeue_after == planner.RECIPE_RECHECK


def test_a_skipped_optional_object_is_one_warning_event_for_the_generation() -> None:
    world = settled()
    warned = replace(
        world.desired, warnings=("demo/s/mon.yaml:1: ServiceMonitor/m: skipped, kind not served",)
    )
    first = planner.plan(warned, replace(world.observe(), generation=2), now=T0)
    assert [e.reason for e in first.events] == [events.RENDER_WARNINGS]
    done = finish.finish(
        first,
        finish.Outcomes(),
        previous=world.status,
        peers=finish.Peers(),
        transient=None,
        generation=2,
        now=T0,
    )
    assert events.RENDER_WARNINGS in [e.reason for e in done.events]
    refused = finish.finish(
        first,
        finish.Outcomes(failures=(refused_write(),)),
        previous=world.status,
        peers=finish.Peers(),
        transient=None,
        generation=2,
        now=T0,
    )
    assert events.RENDER_WARNINGS in [e.reason for e in refused.events], "kept when finish changes the status"
    again = planner.plan(warned, replace(world.observe(), generation=2, previous_status=first.status), now=T0)
    assert events.RENDER_WARNINGS not in [e.reason for e in again.events]


def test_a_deletion_answered_already_gone_is_not_reported_again() -> None:
    # Two objects are no longer desired; the pass deletes one, and the API server answers
    # "already gone" for the other (an earlier pass deleted it; the cache still shows it).
    world = settled()
    world.desired = wanted(LINEAR, [*node_pods("validate", "state-validation", NODES)], NODES)
    planned = planner.plan(world.desired, world.observe(), now=T0)
    stale = [d.ref for d in planned.delete if d.reason == "no longer desired"]
    assert [r.name for r in stale] == ["driver", "plugin"] and planned.removed == tuple(stale)

    def removals(absent: frozenset[object]) -> list[str]:
        done = finish.finish(
            planned,
            finish.Outcomes(absent=frozenset(r for r in stale if r in absent)),
            previous=world.status,
            peers=finish.Peers(),
            transient=None,
            generation=1,
            now=T0,
        )
        return [e.message for e in done.events if e.reason == events.OBJECTS_REMOVED]

    assert removals(frozenset()) == ["deleted 2 objects: DaemonSet/gpu-ns/driver, DaemonSet/gpu-ns/plugin"]
    assert removals(frozenset({stale[0]})) == ["deleted 1 object: DaemonSet/gpu-ns/plugin"]
    assert removals(frozenset(stale)) == []
