"""The operator checks per-kernel images against a real registry before using them.

The session's ``sro run`` is restarted with ``SRO_IMAGE_CHECK_REGISTRIES`` naming a
loopback ``docker-registry`` (images pushed and deleted through its API) and a loopback
HTTP peer answering 500 to everything, and a 2 s ``SRO_IMAGE_CHECK_MISSING_TTL``; it is
restarted without them afterwards. The simulated nodes pull nothing: only sro asks.

Covered: most image lookups answered by the resolver's cache (the figures are printed:
``-s``); a converged group runs its driver by the digest the registry answered, shown
in ``status.kernels``; a node moved to a kernel whose driver image does not exist gets
no DaemonSet of that image (never written, by the API server's audit log), is tainted
``driver-missing`` and named with the image and kernel in ``ImageMissing``; once the
image is pushed the group proceeds within the TTL, the node completes and the taint
goes; a registry that stops answering while a node moves is ``RegistryUnavailable``
and nothing is deleted or tainted; a registry answering 500 is ``RegistryUnavailable``
with its answer, never ``ImageMissing``, and nothing of that group is written.
"""

from __future__ import annotations

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

pytestmark = pytest.mark.e2e

RHEL = {"id": "rhel", "versionId": "9.4"}
K1 = "5.14.0-427.13.1.el9_4.x86_64"
K2 = "5.14.0-503.11.1.el9_5.x86_64"
K3 = "5.14.0-503.40.1.el9_5.x86_64"
REPOSITORY = "drivers/driver"
TTL = 2


def recipe(host: str) -> dict[str, str]:
    return {
        "recipe.yaml": """\
description: image check test
nodeSelector:
  e2e.sro.dev/never: "set"
states:
  - name: state-driver
  - name: state-validation
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
          image: {host}/{REPOSITORY}:{{{{ kernel.full }}}}
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
    }


def _fail(handler: Any) -> None:
    body = b'{"errors":[{"code":"UNKNOWN","message":"the registry is down for maintenance"}]}'
    handler.send_response(500)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)


@pytest.fixture(scope="module")
def registries(
    operator: Operator, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[registry_mod.Registry, registry_mod.HttpPeer]]:
    """A registry and a peer answering 500, and the operator checking both (restored after)."""
    reg = registry_mod.start(tmp_path_factory.mktemp("registry"))
    failing = registry_mod.serve(_fail)
    patch = pytest.MonkeyPatch()
    patch.setenv("SRO_IMAGE_CHECK_REGISTRIES", f"{reg.host},{failing.host}")
    patch.setenv("SRO_IMAGE_CHECK_MISSING_TTL", str(TTL))
    operator.restart()
    try:
        yield reg, failing
    finally:
        patch.undo()
        operator.restart()
        failing.stop()
        reg.stop()


def _daemonsets(made: Made, name: str) -> dict[str, dict[str, Any]]:
    """Live DaemonSets of ``name`` by the kernel they select."""
    return {
        ds["spec"]["template"]["spec"]["nodeSelector"][srs.KERNEL_LABEL]: ds
        for ds in srs.owned(made.cluster, "daemonsets", name, namespace=name)
        if not ds["metadata"].get("deletionTimestamp")
    }


def _taint_keys(made: Made, node: str) -> set[str]:
    body = made.cluster.kubectl_json("get", "node", node)
    return {t["key"] for t in body["spec"].get("taints") or ()}


def _degraded(made: Made, name: str, reason: str) -> Callable[[], dict[str, Any] | None]:
    def check() -> dict[str, Any] | None:
        status = srs.status(made.cluster, name)
        found = srs.condition(status, "Degraded") if status.get("conditions") else {}
        return found if found.get("status") == "True" and found.get("reason") == reason else None

    return check


def _ds_writes(made: Made, namespace: str, since: datetime) -> list[audit.Write]:
    writes = audit.since(audit.read(made.cluster.audit_log), since)
    return [w for w in writes if w.resource == "daemonsets" and w.namespace == namespace]


def _figures(operator: Operator) -> dict[str, float]:
    """Registry requests, lookups by cache answer, and reconciles since the restart."""
    out = {"requests": 0.0, "reconciles": 0.0, "hit": 0.0, "miss": 0.0, "joined": 0.0}
    for sample, labels, value in operator.metrics():
        if sample == "sro_registry_requests_total":
            out["requests"] += value
        elif sample == "sro_registry_lookups_total":
            out[labels["cache"]] += value
        elif sample == "sro_reconcile_total":
            out["reconciles"] += value
    return out


async def test_a_kernel_without_its_driver_image_is_held_tainted_and_proceeds_once_pushed(
    made: Made,
    operator: Operator,
    registries: tuple[registry_mod.Registry, registry_mod.HttpPeer],
    recipe_dir: Callable[[str, dict[str, str]], Path],
) -> None:
    reg, _ = registries
    k1_digest = reg.push(REPOSITORY, K1)
    group, nodes = made.group("img", [{"count": 2, "kernel": K1, "os": RHEL}])
    recipe_name = unique("img-recipe")
    recipe_dir(recipe_name, recipe(reg.host))
    name = made.sr(srs.manifest(unique("img"), recipe=recipe_name, node_selector={srs.GROUP_LABEL: group}))
    status = await srs.wait_ready(made.cluster, name, within=180)
    ds_k1 = _daemonsets(made, name)[K1]
    image = ds_k1["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"{reg.host}/{REPOSITORY}@{k1_digest}", "the DaemonSet runs the digest checked"
    assert status["kernels"] == [
        {
            "kernel": K1,
            "os": "rhel9.4",
            "nodes": 2,
            "image": f"{reg.host}/{REPOSITORY}:{K1}",
            "digest": k1_digest,
        }
    ]

    moved, stays = nodes[1], nodes[0]
    taint = f"{name}.sro.dev/driver-missing"
    missing_since = datetime.now(UTC)
    made.cluster.set_kernel([moved], K2)
    degraded = await waiting.wait_for(_degraded(made, name, "ImageMissing"), timeout=60, interval=0.5,
                                      message="ImageMissing for the new kernel")  # fmt: skip
    assert f"{reg.host}/{REPOSITORY}:{K2}" in degraded["message"]
    assert K2 in degraded["message"] and moved in degraded["message"], degraded["message"]
    await waiting.wait_for(lambda: taint in _taint_keys(made, moved), timeout=30, interval=0.5,
                           message="the moved node tainted driver-missing")  # fmt: skip
    assert taint not in _taint_keys(made, stays)
    assert set(_daemonsets(made, name)) == {K1}

    pushed_at = datetime.now(UTC)
    k2_digest = reg.push(REPOSITORY, K2)
    await waiting.wait_for(lambda: K2 in _daemonsets(made, name), timeout=TTL + 30, interval=0.5,
                           message="the new group's DaemonSet once its image exists")  # fmt: skip
    held = [w for w in _ds_writes(made, name, missing_since) if w.time < pushed_at]
    assert {w.name for w in held} <= {ds_k1["metadata"]["name"]}, (
        "no DaemonSet of the missing image was written"
    )
    status = await srs.wait_ready(made.cluster, name, within=120)
    await waiting.wait_for(lambda: taint not in _taint_keys(made, moved), timeout=30, interval=0.5,
                           message="the driver-missing taint removed")  # fmt: skip
    assert {r["kernel"]: r.get("digest") for r in status["kernels"]} == {K1: k1_digest, K2: k2_digest}
    image = _daemonsets(made, name)[K2]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"{reg.host}/{REPOSITORY}@{k2_digest}"

    seen = _figures(operator)
    lookups = seen["hit"] + seen["miss"] + seen["joined"]
    print(
        f"\nregistry: {seen['requests']:.0f} requests, {lookups:.0f} lookups "
        f"({seen['hit'] / lookups:.0%} answered by the cache) over {seen['reconciles']:.0f} reconciles"
    )
    assert seen["hit"] > seen["miss"], seen

    # The registry stops answering while the other node moves: held, not torn down.
    reg.stop()
    unreachable_since = datetime.now(UTC)
    made.cluster.set_kernel([stays], K3)
    degraded = await waiting.wait_for(_degraded(made, name, "RegistryUnavailable"), timeout=60, interval=0.5,
                                      message="RegistryUnavailable while the registry is down")  # fmt: skip
    assert "unreachable" in degraded["message"] and K3 in degraded["message"], degraded["message"]
    assert set(_daemonsets(made, name)) == {K1, K2}, "the DaemonSet the node ran stays"
    assert taint not in _taint_keys(made, stays)
    deleted = [w for w in _ds_writes(made, name, unreachable_since) if w.verb == "delete"]
    assert not deleted, deleted


async def test_a_registry_answering_500_is_unavailable_not_missing_and_nothing_is_written(
    made: Made,
    registries: tuple[registry_mod.Registry, registry_mod.HttpPeer],
    recipe_dir: Callable[[str, dict[str, str]], Path],
) -> None:
    _, failing = registries
    group, nodes = made.group("img500", [{"count": 1, "kernel": K1, "os": RHEL}])
    recipe_name = unique("img500-recipe")
    recipe_dir(recipe_name, recipe(failing.host))
    name = made.sr(srs.manifest(unique("img500"), recipe=recipe_name, node_selector={srs.GROUP_LABEL: group}))
    degraded = await waiting.wait_for(_degraded(made, name, "RegistryUnavailable"), timeout=60, interval=0.5,
                                      message="RegistryUnavailable: a registry answering 500")  # fmt: skip
    assert "500" in degraded["message"] or "maintenance" in degraded["message"], degraded["message"]
    assert "ImageMissing" not in degraded["message"]
    assert not _daemonsets(made, name)
    assert f"{name}.sro.dev/driver-missing" not in _taint_keys(made, nodes[0])
