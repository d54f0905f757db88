"""``spec.preflight`` in the planner (``sro.plan.preflight``).

Covered: ``status.preflight`` rows per expected kernel (each image and its answer, ready
only when all exist, the build Job's own image left out), kept through a Degraded status;
with ``build``, a missing image of an expected kernel no node runs is built once, on a
node of its OS (no kernel selector), and the row turns ready once it exists; without
``build``, or for a kernel nodes already run, nothing is built ahead. Left out: rendering
and asking the registry (tests/e2e/test_image_builds.py).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from builders import K1, K2, ds, node, node_pods, states, wanted
from test_builds import BUILD_STATE, build_job, jobs
from test_images import IMAGE_K1, IMAGE_K2, Checked, exists, missing, unreachable

from sro.model import views
from sro.plan import observed, planner
from sro.plan import preflight as preflight_

pytestmark = pytest.mark.unit


def expecting(k2: tuple[observed.ImageCheck, ...], *, build: bool = True) -> observed.Preflight:
    """K2 expected: its driver image per ``k2``, its build Job and the builder's answer."""
    builder = observed.ImageCheck(
        image="builder:1", state=BUILD_STATE, outcome="exists", digest="sha256:" + "c" * 64
    )
    return observed.Preflight(
        groups=(K2,), images={K2.key: (*k2, builder)}, builds=(build_job(K2, IMAGE_K2),), build=build
    )


class Expecting(Checked):
    expected: observed.Preflight = observed.NO_PREFLIGHT

    def observe(self) -> observed.Observed:
        return replace(super().observe(), preflight=self.expected)


def world(expected: observed.Preflight) -> Expecting:
    """n1 and n2 on K1 (its image exists), K2 expected."""
    objects = [ds("driver-k1", "state-driver", group=K1), build_job(K1, IMAGE_K1),
               *node_pods("validate", "state-validation", ["n1", "n2"])]  # fmt: skip
    w = Expecting(
        desired=wanted(states("state-driver", "state-validation", (BUILD_STATE, ())), objects, ["n1", "n2"]),
        nodes={"n1": node("n1"), "n2": node("n2")},
        images={K1.key: exists(IMAGE_K1)},
    )
    w.expected = expected
    return w


def test_each_expected_kernel_gets_a_row_of_its_images_without_the_builders() -> None:
    w = world(expecting(missing(IMAGE_K2), build=False))
    w.settle()
    [row] = w.status["preflight"]
    assert (row["kernel"], row["os"], row["ready"]) == (K2.kernel, K2.os.tag, False)
    assert row["images"] == [{"image": IMAGE_K2, "state": "state-driver", "result": "missing"}]
    assert jobs(w) == [] and w.status["phase"] == "Ready"  # nothing built without build: true
    w.expected = expecting(exists(IMAGE_K2), build=False)
    w.step()
    [row] = w.status["preflight"]
    assert row["ready"] and row["images"][0]["digest"].startswith("sha256:")


def test_a_missing_image_of_an_expected_kernel_is_built_once_ahead_on_a_node_of_its_os() -> None:
    w = world(expecting(missing(IMAGE_K2)))
    [job] = [o for o in w.step().apply if o.kind == "Job"]
    for _ in range(3):
        assert not [o for o in w.step().apply if o.kind == "Job"]
    assert len(jobs(w)) == 1
    selector = job.body["spec"]["template"]["spec"].get("nodeSelector") or {}
    assert views.KERNEL_LABEL not in selector
    assert "ahead of its nodes" in {c["type"]: c for c in w.status["conditions"]}["Progressing"]["message"]
    assert w.status["preflight"][0]["ready"] is False


def test_a_kernel_nodes_already_run_is_left_to_their_own_build() -> None:
    w = world(expecting(missing(IMAGE_K2)))
    w.desired = wanted(w.desired.states, w.desired.objects, ["n1", "n2"], groups={"n1": K1, "n2": K2})
    p = planner.plan(w.desired, w.observe(), now=w.now)
    assert not [o for o in p.apply if o.kind == "Job"]


def test_rows_survive_a_degraded_status() -> None:
    w = world(expecting(missing(IMAGE_K2), build=False))
    w.images[K1.key] = unreachable(IMAGE_K1)
    w.step()
    assert w.status["phase"] == "Degraded" and w.status["preflight"][0]["kernel"] == K2.kernel
    assert preflight_.with_rows(dict(w.status), observed.NO_PREFLIGHT) == w.status  # type: ignore[arg-type]
