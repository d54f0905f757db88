"""A driver upgrade that fails validation rolls back, against the real cluster and ``sro run``.

Covers: a new driver image that breaks its nodes (the simulator fails run-to-completion
pods on a node while a pod of that image runs there: ``sim.sro.dev/broken-with``), rolled
out with ``maxFailedNodes: 1``: the first node fails validation, the rollout halts, that
node goes back to the previous image (the DaemonSet carries the kept template again),
validates and is uncordoned; the SpecialResource says UpgradeFailed naming the revision,
the node and the failure, with its Events; the independent watcher (``upgrade_watch``)
sees no other node cordoned or its driver replaced, and the budget held; the API
server's audit log shows sro patched no other node, deleted only that node's pods, and
wrote the DaemonSet twice (the new template, then the kept one). The same with ``sro run``
SIGKILLed when the rollout halts and started again: the rollback is carried on from what
the cluster records, nothing done twice. How long the halt and the rollback took, and
sro's writes, are printed for the record.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import UTC, datetime

import pytest
import specialresources as srs
from conftest import Made, unique
from operator_process import Operator
from simcluster import audit
from support import waiting
from support.upgrade_watch import Watcher

pytestmark = pytest.mark.e2e

KERNEL = ("5.14.0-427.13.1.el9_4.x86_64", "rhel", "9.4")
BROKEN_IMAGE = "registry.example/broken-kmod"
OLD_IMAGE = "quay.io/openshift-psap/simple-kmod"


def _driver_images(made: Made, namespace: str) -> dict[str, set[str]]:
    """Node -> images of its live driver pods."""
    out: dict[str, set[str]] = {}
    for pod in srs.pods(made.cluster, namespace):
        meta, spec = pod["metadata"], pod.get("spec") or {}
        if meta["name"].startswith("simple-kmod-driver-") and not meta.get("deletionTimestamp"):
            images = {c["image"].rsplit(":", 1)[0] for c in spec.get("containers") or ()}
            out.setdefault(spec.get("nodeName", ""), set()).update(images)
    return out


@pytest.mark.parametrize("killed", [False, True], ids=["", "sro-killed-when-it-halts"])
async def test_a_driver_that_fails_validation_is_rolled_back_on_its_node_and_nothing_else_moves(
    made: Made, operator: Operator, killed: bool
) -> None:
    k, os_id, version = KERNEL
    count = 5
    group, nodes = made.group(
        "rb", [{"count": count, "kernel": k, "os": {"id": os_id, "versionId": version}, "pci": []}]
    )
    name = unique("rb")
    policy = {"maxUnavailable": 1, "maxParallel": 1, "maxFailedNodes": 1}
    made.sr(
        srs.manifest(
            name,
            recipe="simple-kmod",
            node_selector={srs.GROUP_LABEL: group},
            extra_spec={"upgradePolicy": policy},
        )
    )
    await srs.wait_ready(made.cluster, name, within=300)
    for node in nodes:  # checks fail on a node while the broken driver runs there
        made.cluster.kubectl("annotate", "node", node, f"sim.sro.dev/broken-with={BROKEN_IMAGE}:*")
    watcher = Watcher(
        cluster=made.cluster,
        nodes=frozenset(nodes),
        namespace=name,
        driver_prefix="simple-kmod-driver-",
        budget=1,
    )
    await watcher.start()
    try:
        await waiting.wait_for(
            lambda: (len(watcher.unschedulable) == count and len(watcher.driver_ready) == count) or None,
            timeout=60,
            message="the watcher to see every node and driver pod",
        )
        watcher.arm()
        started, since = time.monotonic(), datetime.now(UTC)
        made.cluster.kubectl(
            "patch", "sr", name, "--type=merge", "-p", json.dumps({"spec": {"set": {"image": BROKEN_IMAGE}}})
        )
        degraded = await srs.wait_degraded(made.cluster, name, "UpgradeFailed", within=300)
        halted = time.monotonic() - started
        if killed:  # SIGKILL as the rollback begins, start again: it carries on from the cluster
            assert operator.proc is not None
            operator.proc.kill()
            operator.proc.wait(timeout=30)
            operator.start()

        def rolled_back() -> dict[str, object] | None:
            up = srs.status(made.cluster, name).get("upgrade") or {}
            return up if up.get("phase") == "RolledBack" else None

        upgrade = await waiting.wait_for(rolled_back, timeout=300, interval=1.0, message="the rollback")
        took = time.monotonic() - started
        failed = {row["node"] for row in upgrade["failingNodes"]}  # type: ignore[attr-defined]
        await waiting.wait_for(
            lambda: all(not watcher.unschedulable[n] for n in failed) or None,
            timeout=60,
            message="the rolled-back node schedulable in the watcher's view",
        )
    finally:
        await watcher.stop()

    print(f"halted after {halted:.1f}s; rolled back after {took:.1f}s ({len(failed)} node)")
    assert len(failed) == 1, upgrade
    (bad,) = failed
    revision = str(upgrade["revision"])
    assert BROKEN_IMAGE not in revision and revision.startswith("simple-kmod-driver-")
    message = srs.condition(srs.status(made.cluster, name), "Degraded")["message"]
    assert revision in degraded["message"] and bad in degraded["message"], degraded
    assert "state-driver-validation" in degraded["message"], degraded  # the failure, named
    assert f"rolled back to the previous revision: {bad}" in message, message
    by_name = {n["metadata"]["name"]: n for n in srs.nodes(made.cluster, {srs.GROUP_LABEL: group})}
    label = f"{name}.sro.dev/upgrade"
    assert srs.node_labels(by_name[bad]).get(label) == "rolled-back"
    assert not by_name[bad]["spec"].get("unschedulable")  # sro cordoned it, sro uncordoned it
    assert _driver_images(made, name)[bad] == {OLD_IMAGE}  # the previous driver, running again

    def valid() -> bool | None:
        now = {n["metadata"]["name"]: n for n in srs.nodes(made.cluster, {srs.GROUP_LABEL: group})}
        return srs.node_labels(now[bad]).get(f"{name}.sro.dev/state-driver-validation") == "ready" or None

    await waiting.wait_for(valid, timeout=60, message="the rolled-back node valid again")
    assert watcher.violations == []
    assert watcher.replaced[bad] == 2  # the new driver, then the previous one again
    others = set(nodes) - {bad}
    assert {n: (watcher.replaced[n], watcher.cordons[n]) for n in others} == dict.fromkeys(others, (0, 0))
    for node in others:
        assert label not in srs.node_labels(by_name[node]), node  # never started
        assert _driver_images(made, name)[node] == {OLD_IMAGE}, node
    reasons = [e.get("reason") for e in srs.events(made.cluster, name)]
    assert "UpgradeFailed" in reasons and "UpgradeRolledBack" in reasons, reasons

    await waiting.wait_for(operator.idle, timeout=60, interval=0.5, message="sro with nothing left to do")
    writes = audit.by_agent(audit.since(audit.read(made.cluster.audit_log), since), audit.SRO_AGENT_PREFIX)
    print(f"sro's writes: {dict(Counter(f'{w.verb} {w.resource}' for w in writes).most_common(8))}")
    patched = {w.name for w in writes if w.resource == "nodes"}
    assert patched <= {bad}, patched  # no other node's labels, cordon or record
    deleted = [w.name for w in writes if w.verb == "delete" and w.resource == "pods"]
    drivers = [n for n in deleted if n.startswith("simple-kmod-driver-")]
    assert len(drivers) == 2, deleted  # the bad node's: the old driver, then the new one
    assert all(n.endswith(f"-{bad}") for n in deleted if n not in drivers), deleted  # its checks only
    daemonsets = [w for w in writes if w.resource == "daemonsets" and w.verb == "patch"]
    assert len(daemonsets) == 2, daemonsets  # the new template, then the kept one: no rewrites after
