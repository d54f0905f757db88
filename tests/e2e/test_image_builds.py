"""A recipe's build state makes a kernel group's missing driver image in the cluster.

The session's ``sro run`` is restarted with ``SRO_IMAGE_CHECK_REGISTRIES`` naming a
loopback ``docker-registry`` (restored afterwards), with the default cache times: a
build's success must be seen by looking again at once, not by a cached answer
expiring. The build Job's pod is a simulated run-to-completion pod (it succeeds about
1 s after it starts, or fails on a node annotated ``sim.sro.dev/broken``); the test
stands in for the builder by pushing the image to the registry when the Job appears.

Covered: a group whose image exists runs without any build, and the time from
``hack/cluster kernel`` to the new group's first Ready driver pod is printed with an
existing image and with a build (``-s``); a node moved to a kernel without its image
gets one build Job for its group (by the API server's audit log), the SpecialResource
is Progressing ``Building``, no DaemonSet of that kernel is written before the image
exists, the node completes and the Job stays as the build's record; changing the
build's inputs (``spec.set``) makes exactly one new Job and deletes the old; a build
that fails is ``Degraded`` ``BuildFailed`` with its pod's log tail and is tried again
only after the backoff; a kernel in ``spec.preflight`` (with ``build``) is reported in
``status.preflight``, its missing image built ahead on a node of its OS, and a node that
then boots it runs the driver at once with no further build. Left out: a real builder
(``test_image_builds_buildah.py``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import specialresources as srs
from conftest import Made, unique
from operator_process import Operator
from simcluster import audit
from support import registry as registry_mod
from support import waiting
from test_image_checks import _figures

pytestmark = pytest.mark.e2e

RHEL = {"id": "rhel", "versionId": "9.4"}
K1 = "5.14.0-427.13.1.el9_4.x86_64"
K2 = "5.14.0-503.11.1.el9_5.x86_64"
K3 = "5.14.0-503.40.1.el9_5.x86_64"
K4 = "5.14.0-570.12.1.el9_6.x86_64"
REPOSITORY = "drivers/built"
BUILD_LOG = "compiling the module for the kernel\\nerror: no kernel headers found"
RETRY_BASE = 30.0  # sro.plan.builds.RETRY_BASE


def recipe(host: str) -> dict[str, str]:
    image = f"{host}/{REPOSITORY}:{{{{ kernel.full }}}}"
    return {
        "recipe.yaml": """\
description: in-cluster build test
nodeSelector:
  e2e.sro.dev/never: "set"
defaults:
  flavour: plain
states:
  - name: state-driver
  - name: state-validation
  - name: state-driver-build
    after: []
""",
        "state-driver/daemonset.yaml": f"""\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: driver
  labels:
    app: driver
  annotations:
    sro.dev/kernel-affine: "true"
spec:
  selector:
    matchLabels:
      app: driver
  template:
    metadata:
      labels:
        app: driver
    spec:
      containers:
        - name: driver
          image: {image}
""",
        "state-validation/pod.yaml": """\
apiVersion: v1
kind: Pod
metadata:
  name: validate
  annotations:
    sro.dev/per-node: "true"
spec:
  restartPolicy: Never
  containers:
    - name: validate
      image: registry.example.com/validate:1
""",
        "state-driver-build/job.yaml": f"""\
apiVersion: batch/v1
kind: Job
metadata:
  name: build
  annotations:
    sro.dev/kernel-affine: "true"
    sro.dev/builds: "{image}"
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        sim.sro.dev/logs: "{BUILD_LOG}"
    spec:
      restartPolicy: Never
      containers:
        - name: build
          image: registry.example.com/builder:1
          args: ["make", "KVER={{{{ kernel.full }}}}", "FLAVOUR={{{{ set.flavour }}}}"]
""",
    }


@pytest.fixture(scope="module")
def reg(operator: Operator, tmp_path_factory: pytest.TempPathFactory) -> Iterator[registry_mod.Registry]:
    """A loopback registry the operator checks (restored after)."""
    started = registry_mod.start(tmp_path_factory.mktemp("registry"))
    patch = pytest.MonkeyPatch()
    patch.setenv("SRO_IMAGE_CHECK_REGISTRIES", started.host)
    operator.restart()
    try:
        yield started
    finally:
        patch.undo()
        operator.restart()
        started.stop()


def _jobs(made: Made, name: str) -> dict[str, dict[str, Any]]:
    return {
        j["metadata"]["name"]: j
        for j in srs.owned(made.cluster, "jobs", name, namespace=name)
        if not j["metadata"].get("deletionTimestamp")
    }


def _kernel_of(job: dict[str, Any]) -> str:
    return str(job["spec"]["template"]["spec"]["nodeSelector"][srs.KERNEL_LABEL])


def _daemonsets(made: Made, name: str) -> dict[str, dict[str, Any]]:
    return {
        ds["spec"]["template"]["spec"]["nodeSelector"][srs.KERNEL_LABEL]: ds
        for ds in srs.owned(made.cluster, "daemonsets", name, namespace=name)
        if not ds["metadata"].get("deletionTimestamp")
    }


def _ready_driver(made: Made, name: str, kernel: str) -> bool:
    ds = _daemonsets(made, name).get(kernel)
    if ds is None:
        return False
    uid = ds["metadata"]["uid"]
    for pod in srs.pods(made.cluster, name):
        owners = pod["metadata"].get("ownerReferences") or ()
        if any(o.get("uid") == uid for o in owners):
            conditions = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions") or ()}
            if conditions.get("Ready") == "True":
                return True
    return False


def _condition(made: Made, name: str, kind: str, reason: str) -> Callable[[], dict[str, Any] | None]:
    def check() -> dict[str, Any] | None:
        status = srs.status(made.cluster, name)
        found = srs.condition(status, kind) if status.get("conditions") else {}
        return found if found.get("status") == "True" and found.get("reason") == reason else None

    return check


def _jobs_written(made: Made, namespace: str, since: datetime) -> list[str]:
    """The Jobs sro wrote (server-side apply: a PATCH makes them) since ``since``, once each."""
    writes = audit.since(audit.read(made.cluster.audit_log), since)
    found = (
        w.name
        for w in writes
        if w.resource == "jobs" and w.namespace == namespace and w.verb in ("create", "patch", "update")
        and not w.subresource and w.by_sro and w.succeeded
    )  # fmt: skip
    return list(dict.fromkeys(found))


def _ds_writes(made: Made, namespace: str, since: datetime) -> list[audit.Write]:
    writes = audit.since(audit.read(made.cluster.audit_log), since)
    return [w for w in writes if w.resource == "daemonsets" and w.namespace == namespace]


async def _first_job(made: Made, name: str, kernel: str) -> dict[str, Any]:
    def appeared() -> dict[str, Any] | None:
        return next((j for j in _jobs(made, name).values() if _kernel_of(j) == kernel), None)

    return await waiting.wait_for(appeared, timeout=60, interval=0.2, message=f"a build Job for {kernel}")


def _delta(after: dict[str, float], before: dict[str, float]) -> str:
    d = {k: after[k] - before[k] for k in after}
    lookups = d["hit"] + d["miss"] + d["joined"]
    share = d["hit"] / lookups if lookups else 0.0
    return (f"{d['requests']:.0f} registry requests, {lookups:.0f} lookups ({share:.0%} from the cache), "
            f"{d['reconciles']:.0f} reconciles")  # fmt: skip


async def test_a_missing_image_is_built_once_per_group_and_the_nodes_complete(
    made: Made,
    operator: Operator,
    reg: registry_mod.Registry,
    recipe_dir: Callable[[str, dict[str, str]], Path],
) -> None:
    reg.push(REPOSITORY, K1)
    group, nodes = made.group("bld", [{"count": 3, "kernel": K1, "os": RHEL}])
    recipe_name = unique("bld-recipe")
    recipe_dir(recipe_name, recipe(reg.host))
    name = made.sr(srs.manifest(unique("bld"), recipe=recipe_name, node_selector={srs.GROUP_LABEL: group}))
    await srs.wait_ready(made.cluster, name, within=180)
    assert _jobs(made, name) == {}, "an image that exists is never built"

    # With the image there: the time to the new group's first Ready driver pod.
    reg.push(REPOSITORY, K3)
    before = _figures(operator)
    started = time.monotonic()
    made.cluster.set_kernel([nodes[2]], K3)
    await waiting.wait_for(lambda: _ready_driver(made, name, K3), timeout=120, interval=0.2,
                           message="the K3 driver Ready")  # fmt: skip
    existing = time.monotonic() - started
    await srs.wait_ready(made.cluster, name, within=120)
    with_image = _delta(_figures(operator), before)

    # Without it: one build Job for the group of two moved nodes; the test pushes as the builder.
    since = datetime.now(UTC)
    before = _figures(operator)
    started = time.monotonic()
    made.cluster.set_kernel(nodes[:2], K2)
    job = await _first_job(made, name, K2)
    building = await waiting.wait_for(_condition(made, name, "Progressing", "Building"), timeout=5,
                                      interval=0.1, message="Progressing Building")  # fmt: skip
    pushed_at = datetime.now(UTC)
    reg.push(REPOSITORY, K2)
    await waiting.wait_for(lambda: _ready_driver(made, name, K2), timeout=120, interval=0.2,
                           message="the K2 driver Ready after its build")  # fmt: skip
    built = time.monotonic() - started
    print(f"\nkernel change to a first Ready driver pod: {existing:.1f} s with the image, "
          f"{built:.1f} s with a build")  # fmt: skip
    status = await srs.wait_ready(made.cluster, name, within=120)
    print(f"kernel change with the image: {with_image}\nkernel change with a build: "
          f"{_delta(_figures(operator), before)}")  # fmt: skip

    assert f"{reg.host}/{REPOSITORY}:{K2}" in building["message"] and K2 in building["message"], building
    assert _jobs_written(made, name, since) == [job["metadata"]["name"]], "one Job for the group's two nodes"
    assert job["metadata"]["name"].endswith("-1")
    held = [w for w in _ds_writes(made, name, since) if w.time < pushed_at and w.verb in ("create", "patch")]
    assert not [w for w in held if K2.replace(".", "-")[:20] in w.name], held
    assert set(_jobs(made, name)) == {job["metadata"]["name"]}, "the completed Job stays as the record"
    assert {r["kernel"] for r in status["kernels"]} == {K2, K3}
    assert srs.condition(status, "Degraded")["status"] == "False"

    # The build's inputs change: one new Job, the old one deleted, then Ready again.
    since = datetime.now(UTC)
    patch = json.dumps({"spec": {"set": {"flavour": "debug"}}})
    made.cluster.kubectl("patch", "sr", name, "--type=merge", "-p", patch)

    def rebuilt() -> list[str] | None:
        names = sorted(_jobs(made, name))
        return names if names and job["metadata"]["name"] not in names else None

    names = await waiting.wait_for(rebuilt, timeout=60, interval=0.5, message="a rebuild with the new inputs")
    await srs.wait_ready(made.cluster, name, within=120)
    await waiting.wait_for(lambda: len(_jobs(made, name)) == 1, timeout=60, interval=0.5,
                           message="the old build Job deleted")  # fmt: skip
    assert _jobs_written(made, name, since) == names, "exactly one new Job"
    assert "debug" in json.dumps(_jobs(made, name)[names[0]]["spec"]["template"])


async def test_a_failing_build_is_build_failed_with_its_log_tail_and_retried_after_the_backoff(
    made: Made, reg: registry_mod.Registry, recipe_dir: Callable[[str, dict[str, str]], Path]
) -> None:
    group, nodes = made.group("bldf", [{"count": 1, "kernel": K4, "os": RHEL, "broken": True}])
    recipe_name = unique("bldf-recipe")
    recipe_dir(recipe_name, recipe(reg.host))
    name = made.sr(srs.manifest(unique("bldf"), recipe=recipe_name, node_selector={srs.GROUP_LABEL: group}))
    first = await _first_job(made, name, K4)
    degraded = await waiting.wait_for(_condition(made, name, "Degraded", "BuildFailed"), timeout=90,
                                      interval=0.5, message="BuildFailed")  # fmt: skip
    failed_at = time.monotonic()
    await waiting.wait_for(lambda: "no kernel headers" in srs.condition(srs.status(made.cluster, name),
                                                                        "Degraded")["message"],
                           timeout=30, interval=0.5, message="the log tail in BuildFailed")  # fmt: skip
    message = srs.condition(srs.status(made.cluster, name), "Degraded")["message"]
    assert first["metadata"]["name"] in message and "attempt 1" in message and K4 in message, message
    assert f"{reg.host}/{REPOSITORY}:{K4}" in degraded["message"]
    assert not _daemonsets(made, name), "no driver of a missing image"
    assert f"{name}.sro.dev/driver-missing" in {
        t["key"] for t in made.cluster.kubectl_json("get", "node", nodes[0])["spec"].get("taints") or ()
    }

    def retried() -> str | None:
        return next((n for n in _jobs(made, name) if n.endswith("-2")), None)

    second = await waiting.wait_for(
        retried, timeout=RETRY_BASE + 60, interval=0.5, message="a second attempt"
    )
    waited = time.monotonic() - failed_at
    print(f"\nbuild retried {waited:.1f} s after the failure was reported (backoff {RETRY_BASE:.0f} s)")
    assert waited >= RETRY_BASE - 5, waited
    assert second[: -len("-2")] == first["metadata"]["name"][: -len("-1")], "same inputs, next attempt"
    await waiting.wait_for(lambda: first["metadata"]["name"] not in _jobs(made, name), timeout=30,
                           interval=0.5, message="the failed attempt deleted")  # fmt: skip


K6 = "5.14.0-611.20.1.el9_7.x86_64"


async def test_an_expected_kernel_is_reported_built_ahead_and_its_nodes_then_need_no_build(
    made: Made, reg: registry_mod.Registry, recipe_dir: Callable[[str, dict[str, str]], Path]
) -> None:
    reg.push(REPOSITORY, K1)
    group, nodes = made.group("pre", [{"count": 2, "kernel": K1, "os": RHEL}])
    recipe_name = unique("pre-recipe")
    recipe_dir(recipe_name, recipe(reg.host))
    body = srs.manifest(unique("pre"), recipe=recipe_name, node_selector={srs.GROUP_LABEL: group},
                        extra_spec={"preflight": {"kernels": [{"kernel": K6}], "build": True}})  # fmt: skip
    name = made.sr(body)

    def row() -> dict[str, Any] | None:
        rows = srs.status(made.cluster, name).get("preflight") or []
        return rows[0] if rows else None

    def ahead() -> dict[str, Any] | None:
        return next(iter(_jobs(made, name).values()), None)

    found = await waiting.wait_for(ahead, timeout=60, interval=0.2, message="a build ahead of the nodes")
    reg.push(REPOSITORY, K6)  # the test stands in for the builder
    assert srs.KERNEL_LABEL not in (found["spec"]["template"]["spec"].get("nodeSelector") or {})
    assert K6 in json.dumps(found["spec"]["template"]["spec"]["containers"][0]["args"])
    first = await waiting.wait_for(row, timeout=60, interval=0.5, message="status.preflight")
    assert (first["kernel"], first["os"]) == (K6, "rhel9.4"), first
    ready = await waiting.wait_for(lambda: (r := row()) is not None and r["ready"] and r, timeout=60,
                                   interval=0.5, message="status.preflight ready once built")  # fmt: skip
    assert ready["images"] == [{"image": f"{reg.host}/{REPOSITORY}:{K6}", "state": "state-driver",
                                "result": "exists", "digest": ready["images"][0]["digest"]}]  # fmt: skip
    await srs.wait_ready(made.cluster, name, within=120)

    since = datetime.now(UTC)
    started = time.monotonic()
    made.cluster.set_kernel([nodes[1]], K6)
    await waiting.wait_for(lambda: _ready_driver(made, name, K6), timeout=120, interval=0.2,
                           message="the K6 driver Ready")  # fmt: skip
    print(f"\nkernel change to a first Ready driver pod, built ahead: {time.monotonic() - started:.1f} s")
    await srs.wait_ready(made.cluster, name, within=120)
    assert _jobs_written(made, name, since) == [], "the build made ahead is the group's build"
    assert set(_jobs(made, name)) == {found["metadata"]["name"]}
