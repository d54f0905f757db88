"""Figures of ``hack/bench converge``: the chain-of-states floor and sro's pod creations."""

from __future__ import annotations

import datetime
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from simcluster import (
    audit,
    converge,
    converge_floor,
    converge_pods,
    converge_report,
    converge_steps,
    daemons,
    write_cost,
)

pytestmark = pytest.mark.unit


def test_the_chain_is_the_longest_after_path_of_fastest_pods() -> None:
    after = {"a": (), "b": ("a",), "c": ("b",), "d": ("a",), "e": ("c", "d")}
    fastest = {"a": 1.0, "b": 2.0, "c": 0.5, "d": 4.0, "e": 0.25}
    # a, d, e = 5.25 beats a, b, c, e = 3.75
    assert converge_pods.chain_seconds(fastest, after) == pytest.approx(5.25)


def test_each_step_of_the_longest_chain_is_one_node_write_and_complete_joins_the_last() -> None:
    after = {"a": (), "b": ("a",), "c": ("b",), "d": ("a",), "e": ("c", "d"), "f": ()}
    assert converge_floor.label_batches(after) == [["a", "f"], ["b", "d"], ["c"], ["e", "complete"]]
    assert converge_floor.label_batches({}) == []


def test_the_nvidia_gpu_recipe_needs_eight_node_writes_on_each_node() -> None:
    batches = converge_floor.label_batches(converge.states_after(converge.RECIPE))
    assert len(batches) == 8
    assert sorted(batches[0]) == ["state-driver", "state-driver-build"]
    assert sorted(batches[6]) == ["state-feature-discovery", "state-monitoring"]
    assert batches[-1] == ["state-grafana", "complete"]
    assert sum(len(b) for b in batches) == len(converge.states_of(converge.RECIPE)) + 1


def test_a_special_resource_with_taints_needs_one_node_write_more_than_its_label_batches() -> None:
    after = converge.states_after(converge.RECIPE)
    tainted = {"spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}}
    assert converge_floor.node_writes(after, sr=tainted) == 9
    assert converge_floor.node_writes(after, sr={"spec": {"taints": []}}) == 8
    assert converge_floor.node_writes(after, sr={}) == 8


def test_states_without_pods_add_nothing() -> None:
    assert converge_pods.chain_seconds({"b": 2.0}, {"a": (), "b": ("a",), "c": ("b",)}) == pytest.approx(2.0)
    assert converge_pods.chain_seconds({}, {}) == 0.0


def test_a_cycle_is_refused() -> None:
    with pytest.raises(ValueError, match="cycle"):
        converge_pods.chain_seconds({"a": 1.0}, {"a": ("b",), "b": ("a",)})


def test_each_states_fastest_pod_counts_from_when_it_was_first_seen() -> None:
    times = converge_pods.PodTimes()

    def pod(uid: str, state: str) -> dict[str, object]:
        return {"metadata": {"uid": uid, "labels": {converge_pods.STATE_LABEL: state}}}

    times.saw(pod("1", "s"), done=False)
    times.saw(pod("2", "s"), done=False)
    times.saw(pod("2", "s"), done=True)
    times.saw(pod("1", "s"), done=True)
    times.saw(pod("3", "t"), done=False)
    assert set(times.fastest) == {"s"}  # t's pod is not done
    assert 0.0 <= times.fastest["s"] < 5.0


def _write(
    verb: str, name: str, code: int, *, sro: bool = True, user: str = "u", dry_run: bool = False
) -> audit.Write:
    return audit.Write(
        time=datetime.datetime(2026, 11, 27, tzinfo=datetime.UTC),
        user=user,
        user_agent="sro/0.1.0" if sro else "kubectl/v1.36",
        verb=verb,
        resource="pods",
        subresource="",
        namespace="gpu",
        name=name,
        code=code,
        audit_id="",
        dry_run=dry_run,
    )


def test_pods_made_again_after_a_deletion_are_told_from_repeated_applies() -> None:
    writes = [
        _write("patch", "a", 201, dry_run=True),  # tried first: makes nothing
        _write("patch", "a", 201),
        _write("patch", "a", 201),  # a racing second apply: no deletion between
        _write("patch", "b", 201),
        _write("delete", "b", 200, sro=False),  # a graceful delete: the pod is terminating...
        _write("delete", "b", 200, sro=False, user="kubelet"),  # ...and its kubelet finishes it
        _write("patch", "b", 201),  # made again after someone deleted it: "u", who asked
        _write("patch", "c", 201, sro=False),  # not sro's
        _write("patch", "c", 201, sro=False),
        _write("delete", "a", 200, sro=False, user=converge.POD_GC_USER),  # collected once done
        _write("delete", "c", 200),
        _write("delete", "c", 404),  # gone already: no deletion
    ]
    assert converge.pod_creations(writes) == {
        "pods_created_again": 1,
        "pods_created_again_by": {"u": 1},
        "pod_applies_repeated": 1,
        "pods_deleted_by_sro": 1,
        "pods_collected": 1,
    }


def test_a_run_to_completion_pod_is_done_when_it_succeeded_not_while_it_runs_ready() -> None:
    ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    assert converge_pods.pod_done({"spec": {"restartPolicy": "Always"}, "status": ready})
    assert converge_pods.pod_done({"spec": {}, "status": ready})  # Always is the default
    for policy in converge_pods.RUN_TO_COMPLETION:
        assert not converge_pods.pod_done({"spec": {"restartPolicy": policy}, "status": ready})
        assert converge_pods.pod_done({"spec": {"restartPolicy": policy}, "status": {"phase": "Succeeded"}})


def _pod(uid: str, *, phase: str = "Running", ready: bool = True, policy: str = "Always") -> dict[str, Any]:
    return {
        "metadata": {"uid": uid},
        "spec": {"restartPolicy": policy},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]},
    }


def test_a_succeeded_pod_stays_done_after_the_pod_gc_deletes_it_even_across_a_relist() -> None:
    tally = converge_pods.Tally()
    tally.listed([_pod("ds"), _pod("v", policy="Never")])
    assert tally.count == 1, "a validation running Ready is not done"
    assert tally.event("MODIFIED", _pod("v", phase="Succeeded", ready=False, policy="Never")) == (False, True)
    assert tally.event("DELETED", _pod("v", phase="Succeeded", ready=False, policy="Never")) == (True, True)
    assert tally.count == 2
    tally.listed([_pod("ds")])  # the watch timed out; the new list no longer has it
    assert tally.count == 2


def test_a_ready_pod_counts_only_while_it_exists_and_is_ready() -> None:
    tally = converge_pods.Tally()
    tally.listed([_pod("a"), _pod("b")])
    assert tally.event("MODIFIED", _pod("a", ready=False)) == (True, False)
    assert tally.event("DELETED", _pod("b")) == (True, False)
    assert tally.count == 0
    tally.listed([_pod("a")])
    assert tally.count == 1


def test_the_machine_rows_count_sro_in_its_own_phase_only_and_divide_by_that_phase() -> None:
    figures = {
        "floor": {"seconds": 100.0, "control_plane_cpu": {"apiserver": 120.0, "kwok": 60.0}},
        "sro": {
            "seconds": 200.0,
            "cpu_seconds": 40.0,
            "control_plane_cpu": {"apiserver": 200.0, "kwok": 60.0},
        },
    }
    rows = dict(converge_report.machine_rows(figures))
    assert rows["floor: CPU of every process"] == "180 CPU-s: apiserver 120, kwok 60"
    assert rows["floor: cores busy"].startswith("1.80 of ")
    assert rows["sro: CPU of every process"] == "300 CPU-s: apiserver 200, kwok 60, sro 40"
    assert rows["sro: cores busy"].startswith("1.50 of ")
    # 80 CPU-s more of the control plane and 40 of sro's: 120 s at the floor's 1.80 cores.
    assert rows["sro beyond the floor"] == (
        "control plane +80 CPU-s, sro 40 CPU-s: 67 s at the floor's 1.80 cores (the run took 100 s longer)"
    )


def test_a_labelled_floor_is_a_phase_of_its_own_beside_the_floor_and_sro() -> None:
    figures = {
        "floor": {
            "seconds": 100.0,
            "control_plane_cpu": {"apiserver": 120.0},
            "labelled": {"seconds": 125.0, "control_plane_cpu": {"apiserver": 175.0}},
        },
        "sro": {"seconds": 200.0, "cpu_seconds": 40.0, "control_plane_cpu": {"apiserver": 200.0}},
    }
    rows = dict(converge_report.machine_rows(figures))
    assert rows["labelled floor: CPU of every process"] == "175 CPU-s: apiserver 175"
    assert rows["labelled floor: cores busy"].startswith("1.40 of ")
    # What sro costs beyond is still counted from the plain floor.
    assert rows["sro beyond the floor"].startswith("control plane +80 CPU-s, sro 40 CPU-s")


def test_figures_without_control_plane_cpu_print_no_machine_rows() -> None:
    assert (
        converge_report.machine_rows({"floor": {"seconds": 1.0}, "sro": {"seconds": 2.0, "cpu_seconds": 1.0}})
        == []
    )


def test_a_writes_cost_is_what_its_window_spent_beyond_the_idle_rate_per_write() -> None:
    spent = {"apiserver": 7.0, "kwok": 0.5}
    idle = {"apiserver": 0.6, "kwok": 0.9}  # in 6 s: 0.1 and 0.15 a second
    by = write_cost.per_write(spent, idle, seconds=10.0, idle_seconds=6.0, writes=1000)
    assert by["apiserver"] == pytest.approx(6.0)  # (7.0 - 1.0) s over 1,000 writes
    assert by["kwok"] == 0.0  # less than idle: nothing, not a negative cost


def test_the_writes_table_is_a_ratio_to_the_post_of_a_pod() -> None:
    figures = {"POST pod": {"apiserver": 2.0, "etcd": 0.5}, "merge-patch node label": {"apiserver": 5.0}}
    lines = write_cost.table(figures).splitlines()
    assert lines[1].split()[2:4] == ["2.50", "1.00x"]
    assert lines[2].split()[3:5] == ["5.00", "2.00x"]


def test_the_writes_bench_daemonsets_select_their_own_pods_and_run_on_every_node() -> None:
    body = write_cost.daemonset("operand-3")
    selector = body["spec"]["selector"]["matchLabels"]
    template = body["spec"]["template"]
    assert selector.items() <= template["metadata"]["labels"].items()  # else the API server refuses it
    assert selector != write_cost.daemonset("operand-4")["spec"]["selector"]["matchLabels"]
    assert template["spec"]["tolerations"] == [{"operator": "Exists"}]  # tainted GPU nodes too


def test_kernel_figures_keep_each_change_in_order_beside_the_percentiles() -> None:
    figures = converge_report.kernel_figures([(0.5, 6.0), (0.7, 12.0), (0.6, 6.2)])
    assert figures["count"] == 3 and figures["complete_p99"] == 12.0
    assert [s["complete"] for s in figures["samples"]] == [6.0, 12.0, 6.2]
    assert figures["samples"][1]["daemonset"] == 0.7


def test_several_runs_report_each_ratio_and_the_medians() -> None:
    runs = [
        {"floor": {"seconds": 19.0}, "sro": {"seconds": 29.5}, "ratio": 1.55},
        {"floor": {"seconds": 25.4}, "sro": {"seconds": 32.9}, "ratio": 1.30},
        {"floor": {"seconds": 23.6}, "sro": {"seconds": 26.1}, "ratio": 1.10},
        {"sro": {"seconds": 40.0}, "not_ready": True},  # no floor measured: no ratio to count
    ]
    summary = converge_report.runs_summary(runs)
    assert [r["ratio"] for r in summary["runs"]] == [1.55, 1.30, 1.10, None]
    assert summary["median"] == {
        "floor": 23.6,
        "sro": pytest.approx(31.2),
        "ratio": 1.30,
        "labelled_ratio": None,
    }
    lines = converge_report.runs_table(summary).splitlines()
    assert lines[4].split() == ["4", "-", "40.0", "s", "-"]
    assert lines[-1].split() == ["median", "23.6", "s", "31.2", "s", "1.30x"]


def test_runs_with_a_labelled_floor_report_that_ratio_too() -> None:
    runs = [
        {"floor": {"seconds": 20.0}, "sro": {"seconds": 30.0}, "ratio": 1.5, "labelled_ratio": 1.2},
        {"floor": {"seconds": 20.0}, "sro": {"seconds": 26.0}, "ratio": 1.3, "labelled_ratio": 1.0},
    ]
    summary = converge_report.runs_summary(runs)
    assert summary["median"]["labelled_ratio"] == pytest.approx(1.1)
    lines = converge_report.runs_table(summary).splitlines()
    assert lines[0].split()[-2:] == ["/", "labelled"]
    assert lines[-1].split()[-2:] == ["1.40x", "1.10x"]


def test_cpu_by_name_reads_recorded_live_processes_and_what_they_used_since(tmp_path: Path) -> None:
    busy = (
        "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\ntime.sleep(60)"
    )
    record = daemons.start(
        name="spinner", argv=[sys.executable, "-c", busy], pid_dir=tmp_path, log=tmp_path / "spinner.log"
    )
    deadline = time.monotonic() + 30

    def spent_at_least(seconds: float) -> None:
        while (daemons.cpu_seconds(record.pid) or 0.0) < seconds and time.monotonic() < deadline:
            time.sleep(0.02)

    try:
        spent_at_least(0.1)
        first = daemons.cpu_by_name(tmp_path)
        assert set(first) == {"spinner"} and first["spinner"] >= 0.1
        spent_at_least(0.3)  # then it sleeps: its CPU stays put while read twice below
        since = daemons.cpu_by_name(tmp_path, first)
        assert since["spinner"] == pytest.approx(daemons.cpu_seconds(record.pid) - first["spinner"], abs=0.05)
        assert daemons.cpu_by_name(tmp_path, {"other": 1.0}) == {}  # nothing read before: nothing since
    finally:
        daemons.stop(record, pid_dir=tmp_path, grace=1.0)
    assert daemons.cpu_by_name(tmp_path) == {}


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _state_pod(state: str, node: str, *, done: bool, run_to_completion: bool = False) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Running", "conditions": [{"type": "Ready", "status": str(done)}]}
    if run_to_completion:
        status = {"phase": "Succeeded" if done else "Running"}
    return {
        "metadata": {"labels": {converge_pods.STATE_LABEL: state}},
        "spec": {"nodeName": node, "restartPolicy": "Never" if run_to_completion else "Always"},
        "status": status,
    }


def test_each_step_of_a_nodes_chain_is_split_into_opened_ran_and_recorded() -> None:
    clock = _Clock()
    steps = converge_steps.Steps(after={"driver": (), "check": ("driver",)}, clock=clock)
    for at, event in [
        (1.0, lambda: steps.on_pod("ADDED", _state_pod("driver", "n1", done=False))),
        (3.0, lambda: steps.on_pod("MODIFIED", _state_pod("driver", "n1", done=True))),
        (4.0, lambda: steps.on_label("n1", "driver")),
        (5.5, lambda: steps.on_pod("ADDED", _state_pod("check", "n1", done=False, run_to_completion=True))),
        (7.5, lambda: steps.on_pod("MODIFIED", _state_pod("check", "n1", done=True, run_to_completion=True))),
        (7.75, lambda: steps.on_label("n1", "check")),
        # Seen again later (a relist, a reset): the first times stand.
        (20.0, lambda: steps.on_pod("MODIFIED", _state_pod("driver", "n1", done=True))),
        (21.0, lambda: steps.on_label("n1", "driver")),
    ]:
        clock.now = at
        event()
    figures = steps.figures()
    assert figures["driver"]["ran"]["p50"] == 2.0 and figures["driver"]["recorded"]["p50"] == 1.0
    assert figures["driver"]["opened"] == {"count": 0}  # the first state opens on nothing
    assert figures["check"]["opened"]["p50"] == 1.5  # its pod 1.5 s after the driver's label
    assert figures["check"]["ran"]["p50"] == 2.0 and figures["check"]["recorded"]["p50"] == 0.25
    assert figures["all"]["recorded"]["count"] == 2 and figures["all"]["recorded"]["max"] == 1.0


def test_a_state_after_several_opens_from_the_last_of_their_labels_and_not_before_all() -> None:
    clock = _Clock()
    steps = converge_steps.Steps(after={"a": (), "b": (), "c": ("a", "b")}, clock=clock)
    clock.now = 1.0
    steps.on_label("n1", "a")
    steps.on_label("n2", "a")  # n2 never gets b: its c opened on nothing yet
    clock.now = 4.0
    steps.on_label("n1", "b")
    clock.now = 4.5
    steps.on_pod("ADDED", _state_pod("c", "n1", done=False))
    steps.on_pod("ADDED", _state_pod("c", "n2", done=False))
    steps.on_pod("ADDED", _state_pod("unknown", "n1", done=True))  # not a state of the recipe
    figures = steps.figures()
    assert figures["c"]["opened"] == {"count": 1, "p50": 0.5, "p99": 0.5, "max": 0.5}
    assert "unknown" not in figures


def test_the_chain_rows_show_every_state_after_the_pooled_one() -> None:
    figures = {
        "driver": {
            "opened": {"count": 0},
            "ran": converge_steps.summary([2.0]),
            "recorded": converge_steps.summary([1.0]),
        },
        "all": {
            "opened": {"count": 0},
            "ran": converge_steps.summary([2.0]),
            "recorded": converge_steps.summary([1.0]),
        },
    }
    rows = converge_report.step_rows(figures)
    assert [name.strip() for name, _ in rows] == ["every state", "driver"]
    assert rows[1][1] == "opened -, ran 2.00 / 2.00 s, recorded 1.00 / 1.00 s"


def test_events_per_read_divides_each_busiest_streams_events_by_its_reads() -> None:
    line = converge_report.per_read(
        {"pods": 300, "nodes": 50, "jobs": 1}, {"pods": 100, "nodes": 50, "jobs": 0}
    )
    assert line == "pods 3.0 (100 reads), nodes 1.0 (50 reads)"
