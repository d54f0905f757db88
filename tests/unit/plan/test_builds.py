"""In-cluster builds of a missing per-kernel image (``sro.plan.builds``).

Covered: a group whose image is missing gets its build Job once (named with its inputs
and attempt; the group's driver is not written meanwhile; Progressing ``Building``);
the Job's success makes the engine look again once, then the group proceeds and the Job
stays as the build's record; a Job that succeeded without the image appearing, and a
Job that failed, are ``BuildFailed`` with the log tail, retried after a backoff that
doubles up to its bound; changed inputs rebuild exactly once; a prebuilt image is never
built; the build state gates no node; a builder image whose registry cannot be asked
leaves the Jobs as they are, and a missing one is ``BuildFailed`` with no Job. Left
out: the registry and the cluster (tests/e2e/test_image_builds.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from builders import K1, K2, SR, ds, node, node_pods, obj, states, wanted
from test_images import IMAGE_K1, IMAGE_K2, Checked, exists, missing, unreachable

from sro.model import desired, views
from sro.plan import builds, live_records, observed, planner
from sro.status import conditions

pytestmark = pytest.mark.unit

BUILD_STATE = "state-driver-build"


def build_job(group: desired.KernelGroup, image: str, *, script: str = "make") -> desired.DesiredObject:
    o = obj("Job", f"driver-build-{group.kernel}", BUILD_STATE, group=group)
    body: dict[str, Any] = dict(o.body)
    body["metadata"] = {**body["metadata"], "annotations": {"sro.dev/builds": image}}
    container = {"name": "build", "image": "builder:1", "args": [script]}
    body["spec"] = {"template": {"spec": {"containers": [container]}}}
    return replace(o, body=body)


def world(*, k2: tuple[observed.ImageCheck, ...], script: str = "make") -> Checked:
    """n1 on K1 (image exists), n2 on K2; each group with its build Job."""
    objects = [
        ds("driver-k1", "state-driver", group=K1),
        ds("driver-k2", "state-driver", group=K2),
        build_job(K1, IMAGE_K1, script=script),
        build_job(K2, IMAGE_K2, script=script),
        *node_pods("validate", "state-validation", ["n1", "n2"]),
    ]
    spec = states("state-driver", "state-validation", (BUILD_STATE, ()))
    return Checked(
        desired=wanted(spec, objects, ["n1", "n2"], groups={"n1": K1, "n2": K2}),
        nodes={"n1": node("n1"), "n2": node("n2")},
        images={K1.key: exists(IMAGE_K1), K2.key: k2},
    )


def jobs(w: Checked) -> list[str]:
    return sorted(r.name for r in w.objects if r.kind == "Job")


def finish_job(w: Checked, name: str, kind: str, *, message: str = "") -> live_records.LiveObject:
    ref = next(r for r in w.objects if r.name == name)
    since = w.now.strftime("%Y-%m-%dT%H:%M:%SZ")
    done = live_records.ObjectCondition(status="True", reason=kind, message=message, since=since)
    w.objects[ref] = replace(w.objects[ref], uid=f"uid-{name}", conditions={kind: done})
    return w.objects[ref]


def reason(w: Checked, kind: str) -> tuple[str, str, str]:
    found = {c["type"]: c for c in w.status["conditions"]}[kind]
    return found["status"], found["reason"], found["message"]


def test_a_missing_image_gets_its_build_job_once_and_the_group_waits_building() -> None:
    w = world(k2=missing(IMAGE_K2))
    for _ in range(3):
        p = w.step()
        assert "driver-k2" not in {o.ref.name for o in p.apply}
    w.settle()
    assert len(jobs(w)) == 1 and jobs(w)[0].endswith("-1")  # K2's only: K1's image exists
    job = next(o for o in w.objects.values() if o.ref.kind == "Job")
    assert job.ref.name.startswith("driver-build")
    assert reason(w, "Progressing")[:2] == ("True", conditions.BUILDING)
    assert IMAGE_K2 in reason(w, "Progressing")[2]
    assert reason(w, "Degraded")[0] == "False"
    assert w.complete_states("n1") == {"state-driver", "state-validation"}  # the build gates no node
    assert BUILD_STATE not in {s["name"] for s in w.status["states"]}


def test_a_built_image_is_looked_up_again_once_then_the_group_proceeds_and_the_job_stays() -> None:
    w = world(k2=missing(IMAGE_K2))
    w.step()
    [name] = jobs(w)
    live = finish_job(w, name, "Complete")
    p = w.step()
    assert p.recheck == ((IMAGE_K2, live.uid),)
    assert p.requeue_after == 0
    w.images[K2.key] = exists(IMAGE_K2)
    p = planner.plan(w.desired, replace(w.observe(), rechecked=frozenset({live.uid})), now=w.now)
    assert "driver-k2" in {o.ref.name for o in p.apply}
    assert not p.recheck and not [d for d in p.delete if d.ref.kind == "Job"]
    assert p.status["phase"] != "Degraded"


def test_a_build_that_completed_without_the_image_is_build_failed_and_retried() -> None:
    w = world(k2=missing(IMAGE_K2))
    w.step()
    [name] = jobs(w)
    live = finish_job(w, name, "Complete")
    p = planner.plan(w.desired, replace(w.observe(), rechecked=frozenset({live.uid})), now=w.now)
    degraded = {c["type"]: c for c in p.status["conditions"]}["Degraded"]
    assert degraded["reason"] == conditions.BUILD_FAILED
    assert "still does not exist" in degraded["message"] and IMAGE_K2 in degraded["message"]
    assert p.requeue_after == builds.RETRY_BASE.total_seconds()


def test_a_failed_build_is_build_failed_with_its_log_tail_and_retried_with_a_doubling_backoff() -> None:
    w = world(k2=missing(IMAGE_K2))
    w.step()
    [first] = jobs(w)
    live = finish_job(w, first, "Failed", message="Job has reached the specified backoff limit")
    pod = views.PodView(
        namespace=live.ref.namespace, name=f"{first}-abcde", uid="build-pod", node="n2", phase="Failed",
        owner_kind="Job", owner_uid=live.uid, containers=(views.ContainerState(name="build"),),
    )  # fmt: skip
    w.pods[(pod.namespace, pod.name)] = pod
    p = w.step()
    assert [r.uid for r in p.logs_needed] == ["build-pod"]
    assert p.requeue_after == builds.LOG_SOON.total_seconds()  # the next pass shows the tail
    logs = {"build-pod": {"build": "make: entering\nerror: no kernel headers for 5.15\n"}}
    p = planner.plan(w.desired, replace(w.observe(), logs=logs), now=w.now)
    status, why, message = (
        {c["type"]: c for c in p.status["conditions"]}["Degraded"][k] for k in ("status", "reason", "message")
    )
    assert (status, why) == ("True", conditions.BUILD_FAILED)
    assert "no kernel headers for 5.15" in message and "backoff limit" in message and "attempt 1" in message
    assert not p.logs_needed
    assert p.requeue_after == 30.0
    assert jobs(w) == [first]  # kept until the retry: its pod holds the log

    w.later(29)
    w.step()
    assert jobs(w) == [first]
    w.later(1)
    w.step()
    [second] = jobs(w)
    assert second == first[:-1] + "2"
    finish_job(w, second, "Failed")
    p = w.step()
    assert p.requeue_after == 60.0  # doubled
    assert builds.backoff(30) == builds.RETRY_MAX


def test_changed_inputs_rebuild_exactly_once_even_when_the_image_exists() -> None:
    w = world(k2=missing(IMAGE_K2))
    w.step()
    [old] = jobs(w)
    finish_job(w, old, "Complete")
    w.images[K2.key] = exists(IMAGE_K2)
    w.step()
    assert jobs(w) == [old]
    changed = world(k2=exists(IMAGE_K2), script="make V=1")
    w.desired = changed.desired
    w.step()
    [new] = jobs(w)
    assert new != old and new.endswith("-1")
    for _ in range(3):
        w.step()
    assert jobs(w) == [new]
    assert reason(w, "Progressing")[1] == conditions.BUILDING


def test_a_prebuilt_image_is_never_built() -> None:
    w = world(k2=exists(IMAGE_K2))
    w.settle()
    assert jobs(w) == []
    assert w.status["phase"] == "Ready"


def test_an_unreachable_registry_builds_nothing() -> None:
    w = world(k2=unreachable(IMAGE_K2))
    for _ in range(3):
        w.step()
    assert jobs(w) == []
    assert reason(w, "Degraded")[1] == "RegistryUnavailable"


def test_the_build_job_tolerates_the_driver_missing_taint_and_is_not_waited_on() -> None:
    w = world(k2=missing(IMAGE_K2))
    p = w.step()
    [job] = [o for o in p.apply if o.kind == "Job"]
    tolerations = job.body["spec"]["template"]["spec"]["tolerations"]
    taint = {"key": f"{SR}.sro.dev/driver-missing", "operator": "Exists", "effect": "NoSchedule"}
    assert taint in tolerations
    assert job.body["metadata"]["labels"][builds.INPUTS_LABEL] in job.ref.name
    assert len(job.ref.name) <= 63


def builder(outcome: str) -> observed.ImageCheck:
    return observed.ImageCheck(image="builder:1", state=BUILD_STATE, outcome=outcome, detail="HTTP 503")


def test_a_builder_registry_that_cannot_be_asked_leaves_the_jobs_as_they_are_and_makes_none() -> None:
    w = world(k2=missing(IMAGE_K2))
    w.step()
    [name] = jobs(w)
    finish_job(w, name, "Complete")
    w.images[K2.key] = (*exists(IMAGE_K2), builder("exists"))  # the Job's own image: now checked
    w.step()
    assert jobs(w) == [name]  # the same body, the same inputs: no rebuild
    w.images[K2.key] = (*exists(IMAGE_K2), builder("unreachable"))
    for _ in range(3):
        p = w.step()
        assert not [d for d in p.delete if d.ref.kind == "Job"]
        assert not [o for o in p.apply if o.kind == "Job"]
    assert jobs(w) == [name]


def test_a_missing_builder_image_is_build_failed_and_no_job_is_made() -> None:
    w = world(k2=(*missing(IMAGE_K2), builder("missing")))
    p = w.step()
    assert jobs(w) == []
    degraded = {c["type"]: c for c in p.status["conditions"]}["Degraded"]
    assert degraded["reason"] == conditions.BUILD_FAILED and "builder:1" in degraded["message"]


def base_image(digest: str = "", outcome: str = "exists") -> observed.ImageCheck:
    return observed.ImageCheck(image="toolkit:k2", state=BUILD_STATE, outcome=outcome, digest=digest)


def with_base(job: desired.DesiredObject) -> desired.DesiredObject:
    body: dict[str, Any] = dict(job.body)
    annotations = {**body["metadata"]["annotations"], "sro.dev/build-from": "toolkit:k2"}
    body["metadata"] = {**body["metadata"], "annotations": annotations}
    return replace(job, body=body)


def test_a_new_digest_of_a_base_image_rebuilds_once() -> None:
    w = world(k2=missing(IMAGE_K2))
    w.desired = replace(
        w.desired, objects=tuple(with_base(o) if o.kind == "Job" else o for o in w.desired.objects)
    )
    w.images[K2.key] = (*missing(IMAGE_K2), base_image("sha256:" + "1" * 64))
    w.step()
    [first] = jobs(w)
    finish_job(w, first, "Complete")
    w.images[K2.key] = (*exists(IMAGE_K2), base_image("sha256:" + "1" * 64))
    w.step()
    assert jobs(w) == [first]
    w.images[K2.key] = (*exists(IMAGE_K2), base_image("sha256:" + "2" * 64))
    for _ in range(3):
        w.step()
    [second] = jobs(w)
    assert second != first and second.endswith("-1")


def test_a_missing_base_image_is_build_failed_naming_it() -> None:
    w = world(k2=missing(IMAGE_K2))
    w.desired = replace(
        w.desired, objects=tuple(with_base(o) if o.kind == "Job" else o for o in w.desired.objects)
    )
    w.images[K2.key] = (*missing(IMAGE_K2), base_image(outcome="missing"))
    p = w.step()
    assert jobs(w) == []
    degraded = {c["type"]: c for c in p.status["conditions"]}["Degraded"]
    assert degraded["reason"] == conditions.BUILD_FAILED and "toolkit:k2" in degraded["message"]
