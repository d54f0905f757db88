"""A driver upgrade waits for a node's jobs before its drain, against the real cluster and ``sro run``.

Covers ``spec.upgradePolicy.waitForCompletion``: two nodes start together, each running
a run-to-completion pod of the selector; both wait (``waiting-for-jobs`` in their label,
in ``status.upgrade.nodes`` and in the upgrade gauge), cordoned, their driver pods kept,
their jobs left running. The test then lets one job finish: that node goes on to its
drain only after it finished and well before the timeout (the job ended Succeeded, never
evicted), while the other still waits; that one goes on only once ``timeoutSeconds``
passed since it began to wait, and the drain evicts the job it left. A third node with
no job waits for nothing. Every node's driver is replaced once (the independent watcher,
``upgrade_watch``) and all end schedulable.

A job pod is a bare ``restartPolicy: Never`` pod pinned to its node that the test marks
admitted for the simulator itself (``sim.sro.dev/admitted``, hack/kwok/README.md) without
an outcome: the simulated kubelet starts it and it runs until the test sets
``sim.sro.dev/outcome: succeed``, when it ends Succeeded as any finished container does.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import specialresources as srs
from conftest import Made, unique
from operator_process import Operator
from support import waiting
from support.upgrade_watch import Watcher

pytestmark = pytest.mark.e2e

KERNEL = ("5.14.0-427.13.1.el9_4.x86_64", "rhel", "9.4")
TIMEOUT = 45  # waitForCompletion.timeoutSeconds: long enough for the test to let a job finish first
WAITING = "waiting-for-jobs"
LATER = ("draining", "replacing", "validating")


def _job(made: Made, namespace: str, node: str, selector: dict[str, str]) -> str:
    """A run-to-completion pod of ``selector`` on ``node`` that runs until told to finish."""
    name = unique("train")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": selector,
            "annotations": {"sim.sro.dev/admitted": "true"},  # no outcome: it runs until given one
        },
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "train", "image": "registry.example/train:1"}],
        },
    }
    made.cluster.kubectl("apply", "-f", "-", input=json.dumps(pod))
    return name


def _pod(made: Made, namespace: str, name: str) -> dict[str, Any] | None:
    got = made.cluster.kubectl("get", "pod", name, "-n", namespace, "-o", "json", check=False)
    return json.loads(got.stdout) if got.returncode == 0 else None


def _record(node: dict[str, Any], sr: str) -> dict[str, Any]:
    """The node's upgrade record (phase, since, reason), {} once done."""
    return json.loads((node["metadata"].get("annotations") or {}).get(f"sro.dev/upgrade.{sr}") or "{}")


def _since(record: dict[str, Any]) -> datetime:
    return datetime.strptime(record["since"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


async def test_a_node_waits_for_its_jobs_before_its_drain_and_goes_on_past_the_timeout(
    made: Made, operator: Operator
) -> None:
    k, os_id, version = KERNEL
    group, nodes = made.group(
        "jobs", [{"count": 3, "kernel": k, "os": {"id": os_id, "versionId": version}, "pci": []}]
    )
    first, second, third = sorted(nodes)  # the first two start together (maxParallel 2)
    name = unique("jobs")
    selector = {"job": unique("train")}
    policy = {
        "maxUnavailable": 2,
        "maxParallel": 2,
        "waitForCompletion": {"podSelector": selector, "timeoutSeconds": TIMEOUT},
    }
    made.sr(
        srs.manifest(
            name,
            recipe="simple-kmod",
            node_selector={srs.GROUP_LABEL: group},
            extra_spec={"upgradePolicy": policy},
        )
    )
    await srs.wait_ready(made.cluster, name, within=300)
    work = unique("work")
    made.cluster.kubectl("create", "namespace", work)
    finishing, outliving = _job(made, work, first, selector), _job(made, work, second, selector)
    await waiting.wait_for(
        lambda: (
            all(
                (_pod(made, work, p) or {}).get("status", {}).get("phase") == "Running"
                for p in (finishing, outliving)
            )
            or None
        ),
        timeout=60,
        message="both jobs running",
    )
    watcher = Watcher(
        cluster=made.cluster,
        nodes=frozenset(nodes),
        namespace=name,
        driver_prefix="simple-kmod-driver-",
        budget=2,
    )
    await watcher.start()
    label = f"{name}.sro.dev/upgrade"

    def by_name() -> dict[str, dict[str, Any]]:
        return {n["metadata"]["name"]: n for n in srs.nodes(made.cluster, {srs.GROUP_LABEL: group})}

    def gauge(phase: str) -> float | None:
        found = [
            v
            for metric, labels, v in operator.metrics()
            if metric == "sro_specialresource_upgrade_nodes"
            and labels.get("name") == name
            and labels.get("phase") == phase
        ]
        return found[0] if found else None

    try:
        await waiting.wait_for(
            lambda: (len(watcher.unschedulable) == 3 and len(watcher.driver_ready) == 3) or None,
            timeout=60,
            message="the watcher to see every node and driver pod",
        )
        watcher.arm()
        made.cluster.kubectl(
            "patch",
            "sr",
            name,
            "--type=merge",
            "-p",
            json.dumps({"spec": {"set": {"modules": ["simple-kmod"]}}}),
        )

        def both_wait() -> dict[str, dict[str, Any]] | None:
            now = by_name()
            counts = (srs.status(made.cluster, name).get("upgrade") or {}).get("nodes") or {}
            waiting_ = all(srs.node_labels(now[n]).get(label) == WAITING for n in (first, second))
            return now if waiting_ and counts.get(WAITING) == 2 and gauge(WAITING) == 2 else None

        seen = await waiting.wait_for(both_wait, timeout=120, message="both job nodes waiting for their jobs")
        waited = {n: _since(_record(seen[n], name)) for n in (first, second)}
        for node in (first, second):
            assert seen[node]["spec"].get("unschedulable") is True, node  # cordoned while it waits
            assert watcher.replaced[node] == 0, node  # its driver kept
        assert label not in srs.node_labels(seen[third])  # no room for it yet
        for job in (finishing, outliving):
            assert (_pod(made, work, job) or {}).get("status", {}).get("phase") == "Running", job

        finished_at = datetime.now(UTC).replace(microsecond=0)
        made.cluster.kubectl("annotate", "pod", finishing, "-n", work, "sim.sro.dev/outcome=succeed")

        def moved_on(node: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
            now = by_name()
            return (_record(now[node], name), now) if srs.node_labels(now[node]).get(label) in LATER else None

        record, now = await waiting.wait_for(
            lambda: moved_on(first),
            timeout=TIMEOUT,
            interval=0.2,
            message="the node whose job finished drained",
        )
        assert (
            srs.node_labels(now[second]).get(label) == WAITING
        )  # its job still runs, its timeout not yet past
        assert finished_at <= _since(record) < waited[first] + timedelta(seconds=TIMEOUT), record
        done = _pod(made, work, finishing) or {}
        assert done.get("status", {}).get("phase") == "Succeeded", done  # finished, never evicted

        record, _ = await waiting.wait_for(
            lambda: moved_on(second),
            timeout=TIMEOUT + 30,
            interval=0.2,
            message="the node whose job outlived the timeout",
        )
        assert _since(record) >= waited[second] + timedelta(seconds=TIMEOUT), record
        if record["phase"] == "draining":
            assert outliving in record.get("reason", ""), record  # the job it left, named

        def finished() -> dict[str, Any] | None:
            up = srs.status(made.cluster, name).get("upgrade") or {}
            counts = up.get("nodes") or {}
            return up if counts.get("done") == 3 and up.get("phase") == "Done" else None

        await waiting.wait_for(finished, timeout=300, interval=1.0, message="the upgrade to finish")
        await waiting.wait_for(
            lambda: not any(watcher.unschedulable[n] for n in nodes) or None,
            timeout=60,
            message="every node schedulable in the watcher's view",
        )
    finally:
        await watcher.stop()

    assert watcher.violations == []
    assert {n: watcher.replaced[n] for n in nodes} == dict.fromkeys(nodes, 1)
    assert _pod(made, work, outliving) is None  # evicted by the drain once the timeout passed
    assert (_pod(made, work, finishing) or {}).get("status", {}).get("phase") == "Succeeded"
    assert gauge(WAITING) == 0
    made.cluster.kubectl("delete", "namespace", work, "--wait=false")
