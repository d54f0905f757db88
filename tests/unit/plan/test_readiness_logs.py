"""Wait-for-logs readiness (contract section 5), one object at a time: a pod counts once
its containers' log tails match the pattern.

Covers which containers must match (every fetched one; not a running pod's completed
init containers; every one of a finished pod), no tail asked for while the pod is not
ready, tails condensed to the matching line (a line cut before a pattern is tried on
it), the node's record of a match standing for an unread tail or for the same pod, and
a read that failed kept beside the tails and named in the state's message.
"""

from __future__ import annotations

import pytest
from builders import bare_pod, container, ds, ds_pod, live, obj

from sro.model import logpattern
from sro.plan import readiness
from sro.plan.readiness import Outcome

pytestmark = pytest.mark.unit


def test_wait_for_logs_needs_every_fetched_container_tail_to_match() -> None:
    pattern = logpattern.compile_pattern(r"driver loaded")
    d = ds("driver", "state-driver", logs=r"driver loaded")
    pod = ds_pod(d, "n1", containers=(container("main", ready=True), container("sidecar", ready=True)))
    missing = readiness.daemonset_on_node(d, live(d), [pod], logs={})
    partial = readiness.daemonset_on_node(
        d, live(d), [pod], logs={pod.uid: {"main": "... driver loaded\n", "sidecar": "starting"}}
    )
    matched = readiness.logs_verdict(
        pattern, [pod], {pod.uid: {"main": "driver loaded", "sidecar": "driver loaded"}}
    )
    assert missing.outcome is Outcome.WAITING
    assert [r.name for r in missing.logs_needed] == [pod.name]
    assert missing.logs_needed[0].containers == ("main", "sidecar")
    assert partial.outcome is Outcome.WAITING and partial.logs_needed
    assert matched.outcome is Outcome.READY and not matched.logs_needed


def test_logs_are_not_asked_for_while_the_pod_is_not_ready() -> None:
    d = ds("driver", "state-driver", logs=r"ok")
    verdict = readiness.daemonset_on_node(d, live(d), [ds_pod(d, "n1", ready=False)], logs={})
    assert verdict.outcome is Outcome.WAITING
    assert verdict.logs_needed == ()


def test_the_completed_init_containers_of_a_running_pod_need_not_match() -> None:
    d = ds("driver", "state-driver", logs=r"driver loaded")
    init = container("install", ready=False, terminated_reason="Completed", exit_code=0)
    pod = ds_pod(d, "n1", containers=(init, container("main", ready=True)))
    asked = readiness.daemonset_on_node(d, live(d), [pod], logs={})
    assert asked.logs_needed[0].containers == ("main",)
    done = readiness.daemonset_on_node(d, live(d), [pod], logs={pod.uid: {"main": "driver loaded"}})
    assert done.outcome is Outcome.READY


def test_a_finished_pod_needs_every_container_to_match() -> None:
    p = obj("Pod", "validate", "state-validation", node="n1", logs=r"PASS")
    finished = (
        container("prep", exit_code=0, terminated_reason="Completed"),
        container("check", exit_code=0),
    )
    pod = bare_pod(p, containers=finished)
    partial = readiness.pod_verdict(p, pod, logs={pod.uid: {"check": "PASS"}})
    assert partial.outcome is Outcome.WAITING
    assert partial.logs_needed[0].containers == ("prep", "check")
    full = readiness.pod_verdict(p, pod, logs={pod.uid: {"check": "PASS", "prep": "PASS"}})
    assert full.outcome is Outcome.READY


def test_a_ready_line_followed_by_more_output_is_kept_and_still_matches() -> None:
    build = "".join(f"CC drivers/gpu/file{i}.o\n" for i in range(3000))
    after = "".join(f"heartbeat {i}\n" for i in range(200))
    text = build + "Done, now waiting for signal\n" + after
    kept = readiness.condense(text, "driver loaded|Done, now waiting for signal")
    assert kept == "Done, now waiting for signal"
    assert len(readiness.condense(build, "never printed")) == readiness.LOG_KEEP_BYTES


def test_log_requests_carry_the_pattern_the_engine_condenses_with() -> None:
    pod = ds_pod(ds("driver", "state-driver"), "n1")
    verdict = readiness.logs_verdict(logpattern.compile_pattern("module ready"), [pod], {})
    (request,) = verdict.logs_needed
    assert request.pattern == "module ready" and request.containers == ("main",)
    kept = {pod.uid: {"main": readiness.condense("a\nmodule ready\nb\n", request.pattern)}}
    assert readiness.logs_verdict(logpattern.compile_pattern("module ready"), [pod], kept).ready


def test_a_line_is_cut_before_a_pattern_is_tried_on_it() -> None:
    huge = "x" * (readiness.LOG_LINE_MAX * 10) + " ready"
    assert readiness.condense(huge, "ready$") != "ready"
    assert len(readiness.condense(huge, "ready$")) <= readiness.LOG_KEEP_BYTES


@pytest.mark.parametrize(
    ("tails", "recorded", "outcome"),
    [
        (None, True, Outcome.READY),  # not read yet, the label records the match: keep it
        (None, False, Outcome.WAITING),  # not read yet, nothing recorded: wait for the read
        ({"main": "still building\n"}, True, Outcome.WAITING),  # read: the tail decides
        ({"main": "driver loaded\n"}, False, Outcome.READY),
    ],
)
def test_an_unread_tail_counts_as_matched_only_where_the_node_records_the_match(
    tails: dict[str, str] | None, recorded: bool, outcome: readiness.Outcome
) -> None:
    logged = ds("driver", "state-driver", logs=r"driver loaded")
    pod = ds_pod(logged, "n1")
    logs = {} if tails is None else {pod.uid: tails}
    verdict = readiness.daemonset_on_node(logged, live(logged), [pod], logs=logs, recorded=recorded)
    assert verdict.outcome is outcome
    # The tail is asked for until it has been read and matched.
    assert [r.uid for r in verdict.logs_needed] == ([] if tails and "loaded" in tails["main"] else [pod.uid])

    finished = obj("Pod", "check-n1", "state-check", node="n1", logs=r"driver loaded")
    done = bare_pod(finished, containers=(container(terminated_reason="Completed", exit_code=0),))
    logs = {} if tails is None else {done.uid: tails}
    assert readiness.pod_verdict(finished, done, logs=logs, recorded=recorded).outcome is outcome


def test_a_pod_the_node_records_as_matched_needs_no_read_however_its_log_ran_on() -> None:
    logged = ds("driver", "state-driver", logs=r"driver loaded")
    pod = ds_pod(logged, "n1")
    for logs in ({}, {pod.uid: {"main": "heartbeat\n"}}):
        verdict = readiness.daemonset_on_node(
            logged, live(logged), [pod], logs=logs, matched_before=frozenset({pod.uid})
        )
        assert verdict.outcome is Outcome.READY and verdict.logs_needed == ()
        assert verdict.matched == (pod.uid,)
    # A record of another pod is none of this one's: its tail decides.
    other = readiness.daemonset_on_node(
        logged, live(logged), [pod], logs={pod.uid: {"main": "heartbeat\n"}}, matched_before=frozenset({"x"})
    )
    assert other.outcome is Outcome.WAITING and other.matched == ()


REFUSED = "main: 405 MethodNotAllowed: the server does not allow this method on the requested resource"


def test_a_read_that_failed_is_kept_beside_the_tails_and_a_read_that_worked_replaces_it() -> None:
    assert readiness.after_read(None, {}, "") is None
    failed = readiness.after_read(None, {}, REFUSED)
    assert failed == {readiness.READ_FAILED: REFUSED}
    assert readiness.tails_read(failed) is None
    # Tails kept from an earlier read stay, beside the latest failure only.
    earlier = {"main": "CC part1.o", readiness.READ_FAILED: "main: 500: old"}
    again = readiness.after_read(earlier, {}, "x" * 1000)
    assert again is not None
    assert again["main"] == "CC part1.o"
    assert again[readiness.READ_FAILED] == "x" * readiness.READ_FAILED_MAX
    assert readiness.tails_read(again) == {"main": "CC part1.o"}
    assert readiness.after_read(again, {"main": "CC part2.o"}, "") == {"main": "CC part2.o"}


def test_a_state_waiting_on_logs_it_cannot_read_says_why() -> None:
    pattern = logpattern.compile_pattern("driver loaded")
    d = ds("driver", "state-driver", logs="driver loaded")
    pod = ds_pod(d, "n1")
    logs = {pod.uid: readiness.after_read(None, {}, REFUSED) or {}}
    verdict = readiness.logs_verdict(pattern, [pod], logs)
    assert verdict.outcome is Outcome.WAITING and not verdict.stuck
    assert f"waiting for logs of pod {pod.name}" in verdict.reason
    assert REFUSED in verdict.reason
    assert [r.uid for r in verdict.logs_needed] == [pod.uid]  # asked for again
    plain = readiness.logs_verdict(pattern, [pod], {})
    assert "could not be read" not in plain.reason
    # A node whose label stands for the pod keeps it, as when its tails were never read.
    recorded = readiness.logs_verdict(pattern, [pod], logs, recorded=True)
    assert recorded.outcome is Outcome.READY
    assert [r.uid for r in recorded.logs_needed] == [pod.uid]
    # A failure never passes for a match, whatever the pattern.
    anything = readiness.logs_verdict(logpattern.compile_pattern(".*"), [pod], logs)
    assert anything.outcome is Outcome.WAITING
