"""Fixtures of the fault suite: a cluster of its own, the test's replicas, watch and report.

Fault tests restart kube-apiserver, compact etcd and put a proxy before it, which would
disturb every other test sharing the default cluster: they run on one of their own, in
``.run/fault-<pid>`` (or the running one ``SRO_FAULT_CLUSTER_DIR`` names, left running),
started once for the session and taken down after it.

How much each test does is set by the environment: the short form (default) injects each
fault once or twice and runs within ``hack/test``; ``SRO_FAULT_LONG=1`` runs the long form
(20 API server kills, 30 operator kills, ...); ``SRO_FAULT_ROUNDS=N`` sets the rounds
directly. ``SRO_FAULT_SEED`` replays a run: the seed is printed with the figures.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "e2e"))  # specialresources

import lifecycle
import processes
import recorder as recorder_mod
import specialresources as srs
import verdict
from support import cluster as cluster_mod
from support import pools

REPO = Path(__file__).resolve().parents[2]
LONG = os.environ.get("SRO_FAULT_LONG", "") not in ("", "0")
ROUNDS_OVERRIDE = int(os.environ.get("SRO_FAULT_ROUNDS", "0") or 0)
KERNELS = ("5.14.0-427.13.1.el9_4.x86_64", "5.14.0-427.42.1.el9_4.x86_64")
SEED_BASE = int(os.environ.get("SRO_FAULT_SEED", "0") or 0) or random.SystemRandom().randrange(1, 10**9)

REPORT: list[str] = []
"""Lines every fault test adds; printed at the end of the session."""


def rounds(*, short: int, long: int) -> int:
    """How many rounds a test runs: short form, long form, or ``SRO_FAULT_ROUNDS``."""
    if ROUNDS_OVERRIDE:
        return ROUNDS_OVERRIDE
    return long if LONG else short


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if REPORT:
        terminalreporter.section("fault suite figures")
        for line in REPORT:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def fault_cluster() -> Iterator[cluster_mod.Cluster]:
    """A cluster for the fault tests alone, with the CRD and the operator's namespace."""
    given = os.environ.get("SRO_FAULT_CLUSTER_DIR")
    handle = cluster_mod.Cluster(given or REPO / ".run" / f"fault-{os.getpid()}")
    started = False
    if not handle.is_running():
        base = {"name": "fault-base", "prefix": "fault-base", "count": 1, "pci": [], "kernel": KERNELS[0]}
        inventory = {"pools": [{**base, "os": {"id": "rhel", "versionId": "9.4"}}]}
        inv = handle.dir.with_name(handle.dir.name + "-inventory.yaml")
        inv.parent.mkdir(parents=True, exist_ok=True)
        inv.write_text(json.dumps(inventory))
        started = True
        try:
            handle.run("up", "--inventory", str(inv))
        except BaseException:
            with contextlib.suppress(Exception):
                handle.run("down")  # whatever it started, and its run directory
            raise
        finally:
            inv.unlink(missing_ok=True)
    try:
        crd = REPO / "manifests" / "crd" / "sro.dev_specialresources.yaml"
        handle.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crd))
        handle.kubectl("wait", "--for=condition=Established", "crd/specialresources.sro.dev", "--timeout=60s")
        if handle.kubectl("get", "namespace", processes.OPERATOR_NAMESPACE, check=False).returncode != 0:
            handle.kubectl("create", "namespace", processes.OPERATOR_NAMESPACE)
        yield handle
    finally:
        if started and not given:
            handle.run("down")
            handle.dir.with_name(handle.dir.name + ".lock").unlink(missing_ok=True)


class Rig:
    """What one fault test works with; everything it starts is stopped by the fixture."""

    def __init__(
        self,
        *,
        cluster: cluster_mod.Cluster,
        work: Path,
        seed: int,
        recorder: recorder_mod.Recorder,
        kernels: dict[str, str],
        selector: dict[str, str],
    ) -> None:
        self.cluster = cluster
        self.work = work
        self.seed = seed
        self.rng = random.Random(seed)
        self.recorder = recorder
        self.nodes = tuple(kernels)
        self.kernels = kernels  # node -> the kernel it runs now
        self.selector = selector  # the nodeSelector matching exactly this test's nodes
        self.fleet: processes.Fleet | None = None
        self.proxy: processes.FaultProxy | None = None
        self.rounds: list[lifecycle.Round] = []
        self.events: dict[str, list[dict[str, Any]]] = {}
        self.since = time.time()  # the audit looks at writes from here on

    @property
    def pki(self) -> Path:
        return self.cluster.dir / "pki"

    def start_fleet(self, *, replicas: int, through_proxy: bool = False) -> processes.Fleet:
        """``replicas`` sro processes, straight to the API server or through the fault proxy."""
        server = self.cluster.server()
        if through_proxy:
            self.proxy = processes.FaultProxy(
                upstream=server, pki=self.pki, client_certs=self.work / "certs",
                log=self.work / "faultproxy.log", seed=self.seed,
            )  # fmt: skip
            server = self.proxy.server
        self.fleet = processes.Fleet(pki=self.pki, work=self.work, server=server)
        for _ in range(replicas):
            self.fleet.spawn()
        return self.fleet

    def check(self) -> None:
        """While waiting: restart replicas that died unasked (as a Deployment would)."""
        if self.fleet is not None:
            self.fleet.revive()

    def new_round(self) -> lifecycle.Round:
        r = lifecycle.Round(
            cluster=self.cluster, nodes=self.nodes, kernels=self.kernels, rng=self.rng,
            number=len(self.rounds) + 1, check=self.check,
        )  # fmt: skip
        self.rounds.append(r)
        return r

    def close_round(self, r: lifecycle.Round) -> None:
        """Keeps the round's Events (the namespace ``default`` outlives the round)."""
        self.events[r.name] = srs.events(self.cluster, r.name)

    async def play_round(
        self,
        *,
        converge: lifecycle.Fault | None,
        kernel: lifecycle.Fault | None,
        teardown: lifecycle.Fault | None,
    ) -> lifecycle.Round:
        """One SpecialResource's whole life, each phase with its fault; no duplicate
        object may appear after converging or after the kernel change."""
        r = self.new_round()
        await r.converge(selector=self.selector, fault=converge)
        assert not lifecycle.duplicates(self.cluster, name=r.name)
        await r.kernel_change(fault=kernel)
        assert not lifecycle.duplicates(self.cluster, name=r.name)
        await r.teardown(fault=teardown)
        self.close_round(r)
        return r

    def judge(
        self, fleet: processes.Fleet, *, test: str, faults: dict[str, int], extra: str = ""
    ) -> verdict.Totals:
        """Reports the test's figures, then the audit's verdict on every round (which fails
        the test on any violation); the totals for the test's own further checks."""
        REPORT.extend(self.report(test, faults=faults, extra=extra))
        totals = verdict.judge(
            cluster=self.cluster,
            fleet=fleet,
            rec=self.recorder,
            rounds=self.rounds,
            events=self.events,
            since=self.since,
        )
        REPORT.append("  " + totals.line())
        return totals

    def report(self, test: str, *, faults: dict[str, int], extra: str = "") -> list[str]:
        """Figures of the test: faults injected, convergence after them, and (later) the audit."""
        lines = [f"{test}: {len(self.rounds)} rounds" + (f"; {extra}" if extra else "")]
        lines.append("  faults: " + ", ".join(f"{k} x{v}" for k, v in sorted(faults.items())))
        by_phase: dict[str, list[lifecycle.PhaseRecord]] = {}
        for r in self.rounds:
            for rec in r.records:
                if rec.fault != "none":
                    by_phase.setdefault(rec.phase, []).append(rec)
        for phase, records in sorted(by_phase.items()):
            values = [rec.convergence for rec in records]
            during = sum(1 for rec in records if rec.during)
            lines.append(
                f"  {phase}: {len(values)} faults ({during} before the phase was done), convergence after "
                f"the fault p50={statistics.median(values):.1f}s max={max(values):.1f}s"
            )
        return lines


def release_lease(cluster: cluster_mod.Cluster) -> None:
    """Deletes the operator's Lease, which a killed process of an earlier test may still hold:
    the next test's replicas need not wait it out."""
    cluster.kubectl("delete", "lease", "sro-leader", "-n", processes.OPERATOR_NAMESPACE, "--ignore-not-found")


@pytest.fixture
def rig(fault_cluster: cluster_mod.Cluster, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    seed = SEED_BASE + sum(map(ord, request.node.name))
    group = f"g-{uuid.uuid4().hex[:8]}"
    made = [
        pools.make(fault_cluster, count=2, kernel=k, prefix=f"f{i}", labels={"fault.sro.dev/group": group})
        for i, k in enumerate(KERNELS)
    ]
    names = [n for p in made for n in p.nodes]
    kernels = {n: k for p, k in zip(made, KERNELS, strict=True) for n in p.nodes}
    rec = recorder_mod.Recorder(
        server=fault_cluster.server(),
        pki=fault_cluster.dir / "pki",
        operator_namespace=processes.OPERATOR_NAMESPACE,
    )
    handle = Rig(
        cluster=fault_cluster, work=tmp_path, seed=seed, recorder=rec, kernels=kernels,
        selector={"fault.sro.dev/group": group},
    )  # fmt: skip
    started = time.monotonic()
    try:
        release_lease(fault_cluster)
        rec.start()
        yield handle
    finally:
        # Every step runs even if one before it failed; the first failure is raised after.
        steps: list[Callable[[], object]] = [
            lambda: handle.fleet.stop_all() if handle.fleet is not None else None,
            lambda: handle.proxy.stop() if handle.proxy is not None else None,
            rec.stop,
            *[lambda name=r.name: let_go(fault_cluster, name) for r in handle.rounds],
            lambda: fault_cluster.delete_nodes(names),
            lambda: release_lease(fault_cluster),
        ]
        failures = []
        for step in steps:
            try:
                step()
            except Exception as exc:
                failures.append(exc)
        REPORT.append(
            f"  ({request.node.name} took {time.monotonic() - started:.0f}s; "
            f"replay with SRO_FAULT_SEED={SEED_BASE})"
        )
        if failures:
            raise failures[0]


def let_go(cluster: cluster_mod.Cluster, name: str) -> None:
    """Deletes a SpecialResource a failed round may have left, its finalizer too if sro is gone."""
    srs.delete(cluster, name)
    patch = json.dumps({"metadata": {"finalizers": None}})
    cluster.kubectl("patch", "sr", name, "--type=merge", "-p", patch, check=False)
