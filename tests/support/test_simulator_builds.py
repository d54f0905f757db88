"""A known driver image prints its ready line only once its build has ended
(hack/lib/simcluster/pod_logs.py), and the bench's floor counts it done only then; the
bench reports the phases sro's status went through."""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from simcluster import converge_pods, converge_report, converge_steps, layout, pod_logs

pytestmark = pytest.mark.unit

READY = "Done, now waiting for signal"


def _driver(
    uid: str = "u1", *, built_at: float | None = None, ready: bool = True, build: str | None = None
) -> dict[str, Any]:
    annotations: dict[str, str] = {}
    if built_at is not None:
        annotations[pod_logs.BUILT_AT] = pod_logs.stamp(built_at)
    if build is not None:
        annotations[pod_logs.BUILD_SECONDS] = build
    return {
        "metadata": {
            "name": f"driver-{uid}",
            "namespace": "ops",
            "uid": uid,
            "annotations": annotations,
            "labels": {converge_pods.STATE_LABEL: "state-driver"},
        },
        "spec": {"nodeName": "n1", "containers": [{"name": "d", "image": "nvcr.io/nvidia/driver:550-5.14"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": str(ready)}]},
    }


def test_the_driver_image_prints_build_output_alone_until_built_then_its_ready_line() -> None:
    known = pod_logs.known_log(_driver())
    assert known is not None and known.ready == READY
    building, built = known.lines(built=False), known.lines(built=True)
    assert READY not in building and sum(len(line) + 1 for line in building) >= 48 * 1024
    assert built[: len(building)] == building, "the build output stays; the ready line follows it"
    assert built[len(building)] == READY and len(built) > len(building) + 1
    other = _driver()
    other["spec"]["containers"][0]["image"] = "example.com/driver:1"
    assert pod_logs.known_log(other) is None


def test_a_pods_build_time_is_its_own_annotation_else_a_draw_from_the_clusters_range() -> None:
    assert pod_logs.build_seconds({pod_logs.BUILD_SECONDS: "7.5"}, default=(1, 2)) == 7.5
    assert pod_logs.build_seconds({pod_logs.BUILD_SECONDS: "0"}, default=(1, 2)) == 0.0
    for unreadable in ("soon", "-3", ""):
        drawn = pod_logs.build_seconds({pod_logs.BUILD_SECONDS: unreadable}, default=(1, 2))
        assert 1 <= drawn <= 2
    draws = {pod_logs.build_seconds({}, default=(1, 4)) for _ in range(50)}
    assert all(1 <= d <= 4 for d in draws) and len(draws) > 1


def test_the_build_range_argument() -> None:
    assert pod_logs.build_range("1-4") == (1.0, 4.0)
    assert pod_logs.build_range("0") == (0.0, 0.0)
    assert pod_logs.build_range("120-300") == (120.0, 300.0)
    for bad in ("4-1", "x", "1-y", "-1"):
        with pytest.raises(argparse.ArgumentTypeError):
            pod_logs.build_range(bad)


def test_a_stamp_reads_back_to_the_same_time() -> None:
    at = 1_796_000_000.123456
    assert pod_logs.read_stamp(pod_logs.stamp(at)) == pytest.approx(at, abs=1e-6)
    assert pod_logs.read_stamp(None) is None and pod_logs.read_stamp("yesterday") is None


class _Told(pod_logs.Builds):
    """Builds that say when a build has finished (what the timer calls)."""

    def __init__(self, run: layout.RunDir) -> None:
        super().__init__(run)
        self.ended = asyncio.Event()

    def finish(self, uid: str, path: Path, known: pod_logs.KnownLog) -> None:
        super().finish(uid, path, known)
        if not self.pending:
            self.ended.set()


def test_the_whole_log_is_written_when_the_build_ends_and_never_twice(tmp_path: Path) -> None:
    run = layout.RunDir(tmp_path)
    builds = _Told(run)

    async def scenario() -> tuple[str, str, bool]:
        pod = _driver(built_at=time.time() + 0.2)
        path = pod_logs.path_of(run, pod)
        known = pod_logs.known_log(pod)
        assert known is not None
        pod_logs.write(path, known.lines(built=False))
        builds.on_pod("MODIFIED", pod)
        builds.on_pod("MODIFIED", pod)  # a second event schedules nothing more
        assert len(builds.pending) == 1
        before = path.read_text()
        loop = asyncio.get_running_loop()
        assert 0.1 < builds.pending["u1"].when() - loop.time() <= 0.2, "due at built-at"
        await builds.ended.wait()
        after = path.read_text()
        builds.on_pod("MODIFIED", pod)  # an event after the build: nothing again
        return before, after, bool(builds.pending)

    before, after, again = asyncio.run(scenario())
    assert READY not in before
    assert READY in after and after.count(READY) == 1
    assert not again


def test_a_build_already_over_when_devsim_starts_is_finished_at_once_and_a_gone_pod_is_not(
    tmp_path: Path,
) -> None:
    run = layout.RunDir(tmp_path)
    builds = _Told(run)

    async def scenario() -> None:
        late, gone = _driver("late", built_at=time.time() - 30), _driver("gone", built_at=time.time() - 30)
        known = pod_logs.known_log(late)
        assert known is not None
        pod_logs.write(pod_logs.path_of(run, late), known.lines(built=False))
        builds.on_pod("ADDED", late)
        builds.on_pod("ADDED", gone)  # its log file was never written (or removed)
        await builds.ended.wait()

    asyncio.run(scenario())
    assert READY in pod_logs.path_of(run, _driver("late")).read_text()
    assert not pod_logs.path_of(run, _driver("gone")).exists()


def test_a_deleted_pods_build_is_cancelled(tmp_path: Path) -> None:
    builds = pod_logs.Builds(layout.RunDir(tmp_path))

    async def scenario() -> None:
        pod = _driver(built_at=time.time() + 60)
        builds.on_pod("ADDED", pod)
        handle = builds.pending["u1"]
        builds.on_pod("DELETED", pod)
        assert handle.cancelled() and not builds.pending

    asyncio.run(scenario())


def test_the_floor_counts_a_ready_driver_done_only_once_its_build_has_ended() -> None:
    tally = converge_pods.Tally()
    now = 1_000.0
    tally.listed([_driver("a", built_at=now + 5), _driver("b")], wall=now)
    assert tally.count == 1, "b builds nothing: done when Ready; a builds for 5 s more"
    assert tally.next_release(wall=now) == pytest.approx(5.0)
    assert tally.release(wall=now + 4.9) == [] and tally.count == 1
    # It goes unready while building: no longer waited on.
    assert tally.event("MODIFIED", _driver("a", built_at=now + 5, ready=False), wall=now + 1) == (
        False,
        False,
    )
    assert tally.next_release(wall=now + 1) is None
    tally.event("MODIFIED", _driver("a", built_at=now + 5), wall=now + 2)
    assert tally.release(wall=now + 5) == ["a"] and tally.count == 2
    assert tally.done["a"] and tally.next_release(wall=now + 5) is None
    # Deleted while building: never counted.
    tally.event("ADDED", _driver("c", built_at=now + 20), wall=now + 6)
    tally.event("DELETED", _driver("c", built_at=now + 20), wall=now + 7)
    assert tally.release(wall=now + 30) == [] and tally.count == 2


def test_a_drivers_step_ran_until_its_build_ended() -> None:
    clock = {"mono": 100.0, "wall": 5_000.0}
    steps = converge_steps.Steps(
        after={"state-driver": ()}, clock=lambda: clock["mono"], wall=lambda: clock["wall"]
    )
    steps.on_pod("ADDED", _driver("a", built_at=5_003.0, ready=False))
    clock["mono"], clock["wall"] = 101.0, 5_001.0
    steps.on_pod("MODIFIED", _driver("a", built_at=5_003.0))
    assert steps.done[("n1", "state-driver")] == pytest.approx(103.0), "Ready at 101, built at 103"


def test_the_bench_says_how_long_the_status_spent_in_each_phase_longest_first() -> None:
    text = converge_report.phases_text({"Degraded: ApplyFailed": 130.04, "Progressing": 41.0, "Ready": 0.1})
    assert text == "Degraded: ApplyFailed 130.0 s, Progressing 41.0 s, Ready 0.1 s"
