"""sro's side of ``hack/bench converge``: the operator as a real process, measured from outside.

Everything here is observed the way an administrator could: the SpecialResource's status
for time to Ready, node labels (``<sr>.sro.dev/<state>: ready``) for each state's
progress, the operator's ``/metrics`` for every request it sent, ``/proc`` for its CPU
time and peak memory, and the API server's audit log for its writes. Nothing asks the
operator how well it did.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simcluster import audit, converge_steps, daemons, kube, memory_top, nodes, scrape

JSON = dict[str, Any]
SR_PATH = "/apis/sro.dev/v1alpha1/specialresources"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Operator:
    """``sro run`` as a subprocess, stopped by its pid; ``profile()`` samples it with
    py-spy (every thread: renders and plans run on worker threads, which cProfile,
    seeing only the thread that started it, would miss)."""

    sro: Path
    kubeconfig: Path
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    port: int = 0
    spy: subprocess.Popen[bytes] | None = None
    memory: Path | None = None  # --profile-memory: memray's capture of the first process

    def start(self) -> None:
        self.port = _free_port()
        # Under memray (``memory``), aggregated: only what is live at the high-water mark is
        # kept, so the capture stays small however many allocations a convergence makes. A
        # restart runs plain: it would overwrite the capture of the convergence.
        traced = self.memory is not None and self.proc is None
        prefix = (
            [
                str(self.sro.parent / "memray"),
                "run",
                "--aggregate",
                "--trace-python-allocators",
                "--force",
                "-o",
                str(self.memory),
            ]
            if traced
            else []
        )
        args = [
            *prefix, str(self.sro), "run", "--leader-elect", "false", "--log-format", "json",
            "--health-probe-bind-address", f"127.0.0.1:{self.port}",
            "--metrics-bind-address", f"127.0.0.1:{self.port}",
        ]  # fmt: skip
        # A restart (``restart``) appends: the log of the convergence it follows is kept.
        with self.log.open("ab" if self.proc is not None else "wb") as out:
            self.proc = subprocess.Popen(
                args,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "KUBECONFIG": str(self.kubeconfig)},
            )

    async def wait_ready(self, within: float = 120) -> None:
        deadline = time.monotonic() + within
        while not self._get("/readyz"):
            if self.proc is None or self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"sro run did not become ready; see {self.log}")
            await asyncio.sleep(0.2)

    def _get(self, path: str) -> str | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as resp:
                return str(resp.read().decode())
        except OSError:
            return None

    def scrape(self) -> scrape.Scrape:
        """One read of the operator's /metrics: every figure of a measurement point comes
        from it (``scrape``); read ``cpu_seconds`` first, as each read costs the operator CPU."""
        return scrape.Scrape(self._get("/metrics") or "")

    def cpu_seconds(self) -> float:
        assert self.proc is not None
        spent = daemons.cpu_seconds(self.proc.pid)
        assert spent is not None, "the operator exited"
        return spent

    def peak_rss_mb(self) -> float:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def memory_top(self, *, count: int = 30) -> str:
        """What the operator held at its peak, by the code that made it (``memory_top``)."""
        if self.memory is None or not self.memory.exists():
            return "(no memray capture)"
        return memory_top.top(self.memory, count=count)

    def profile(self, out: Path) -> None:
        """Start sampling the operator (py-spy's raw folded stacks into ``out``, 100 Hz).

        Only samples of the thread holding the GIL (``--gil``) are kept: a thread waiting
        for it (the event loop while a plan runs on a worker, or the reverse) would
        otherwise be counted where it waits, and the profile would show wall time, not
        the CPU the operator spends."""
        assert self.proc is not None
        spy = self.sro.parent / "py-spy"
        if not spy.exists():
            raise RuntimeError(f"--profile needs py-spy ({spy}): pip install -e '.[bench]'")
        cmd = [str(spy), "record", "--pid", str(self.proc.pid), "--format", "raw", "--rate", "100", "--gil"]
        self.spy = subprocess.Popen(
            [*cmd, "--nonblocking", "--output", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def profiled(self) -> None:
        """Stop sampling; py-spy writes its file when interrupted."""
        if self.spy is not None and self.spy.poll() is None:
            self.spy.send_signal(signal.SIGINT)
            self.spy.wait(timeout=60)

    def stop(self) -> int:
        self.profiled()
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=10)


async def restart(operator: Operator, *, audit_log: Path, within: float, quiet: float = 5.0) -> JSON:
    """Stop the operator once everything is Ready and start it again (an upgrade of sro, a
    crash, a new leader): what the new process writes (nothing, if it trusts what it finds
    and what sro recorded before) and reads, and how long until it holds no work (``quiet``
    seconds without a queued key or a pass, after at least one pass)."""
    operator.stop()
    started_wall, started = time.time(), time.monotonic()
    operator.start()
    await operator.wait_ready()
    calm_since: float | None = None
    while True:
        now = time.monotonic()
        seen = operator.scrape()
        if seen.passes() > 0 and not seen.busy():
            calm_since = now if calm_since is None else calm_since
            if now - calm_since >= quiet:
                break
        else:
            calm_since = None
        if now - started > within:
            raise TimeoutError(f"the restarted operator still had work after {within:g}s")
        await asyncio.sleep(0.2)
    cpu = operator.cpu_seconds()
    last = operator.scrape()
    requests = last.requests()  # a new process: its counters start at zero
    writes = [w for w in audit.read(audit_log) if w.by_sro and w.time.timestamp() >= started_wall]
    return {
        "seconds_to_idle": calm_since - started,
        "passes": last.passes(),
        "cpu_seconds": cpu,
        "requests_non_watch": non_watch(requests),
        "requests_by": {f"{v} {r}": n for (v, r), n in sorted(requests.items()) if v != "watch" and n},
        "writes": len(writes),
        "writes_by": audit.tally(writes),
    }


def non_watch(counts: Mapping[tuple[str, str], int]) -> int:
    return sum(v for (verb, _), v in counts.items() if verb != "watch")


def diff(after: Counter[tuple[str, str]], before: Counter[tuple[str, str]]) -> Counter[tuple[str, str]]:
    out = Counter(after)
    out.subtract(before)
    return +out


async def _states_progress(
    client: kube.Kube,
    *,
    sr: str,
    states: Sequence[str],
    started: float,
    curves: dict[str, list[tuple[float, int]]],
    stop: asyncio.Event,
    steps: converge_steps.Steps | None = None,
) -> None:
    """Keep ``curves[state]`` as (seconds since ``started``, nodes with the state ready),
    and tell ``steps`` when a state's label first appears on a node."""
    keys = {f"{sr}.sro.dev/{s}": s for s in states}
    ready: dict[str, set[str]] = {s: set() for s in states}
    path = "/api/v1/nodes"  # the bench's cluster has only the nodes it selects
    while not stop.is_set():
        listed = await client.get(path, request_seconds=120)
        for node in listed["items"]:
            _note(node, keys, ready, curves, started, steps=steps)
        try:
            async for event in client.watch(
                path, resource_version=listed["metadata"]["resourceVersion"], timeout_seconds=30
            ):
                if stop.is_set():
                    return
                if event.get("type") in ("ADDED", "MODIFIED"):
                    _note(event["object"], keys, ready, curves, started, steps=steps)
        except kube.ApiError as exc:
            if exc.status != 410:
                raise


def _note(
    node: JSON,
    keys: Mapping[str, str],
    ready: dict[str, set[str]],
    curves: dict[str, list[tuple[float, int]]],
    started: float,
    *,
    steps: converge_steps.Steps | None,
) -> None:
    name = node["metadata"]["name"]
    labels = node["metadata"].get("labels") or {}
    for key, state in keys.items():
        now = labels.get(key) == "ready"
        if now != (name in ready[state]):
            (ready[state].add if now else ready[state].discard)(name)
            curves[state].append((time.monotonic() - started, len(ready[state])))
            if now and steps is not None:
                steps.on_label(name, state)


class NotReady(TimeoutError):
    """The SpecialResource was not Ready in time; ``curves`` is how far each state got."""

    def __init__(self, message: str, *, curves: dict[str, list[tuple[float, int]]]) -> None:
        super().__init__(message)
        self.curves = curves


async def converge(
    client: kube.Kube,
    body: JSON,
    *,
    states: Sequence[str],
    total: int,
    within: float,
    steps: converge_steps.Steps | None = None,
    phases: dict[str, float] | None = None,
) -> tuple[float, dict[str, list[tuple[float, int]]]]:
    """Create the SpecialResource; seconds until it is Ready on ``total`` nodes, and the
    per-state curves meanwhile; ``steps`` is told of every operand pod and state label;
    ``phases`` gets the seconds its status spent in each phase (``Degraded: <reason>`` for
    a Degraded one): a rollout that only progresses shows Progressing and nothing else."""
    name = body["metadata"]["name"]
    namespace = (body.get("spec") or {}).get("namespace") or name
    curves: dict[str, list[tuple[float, int]]] = {s: [(0.0, 0)] for s in states}
    stop = asyncio.Event()
    started = time.monotonic()
    watchers = [
        asyncio.create_task(
            _states_progress(
                client, sr=name, states=states, started=started, curves=curves, stop=stop, steps=steps
            )
        )
    ]
    if steps is not None:
        pods = f"/api/v1/namespaces/{namespace}/pods"
        watchers.append(
            asyncio.create_task(kube.informer(client, pods, steps.on_pod, synced=asyncio.Event()))
        )
    try:
        await client.create(SR_PATH, body)
        last = time.monotonic()
        while True:
            sr = await client.get(f"{SR_PATH}/{name}")
            status = sr.get("status") or {}
            now = time.monotonic()
            if phases is not None:
                phase = str(status.get("phase") or "(none)")
                if phase == "Degraded":
                    reason = next(
                        (
                            c.get("reason")
                            for c in status.get("conditions") or ()
                            if c.get("type") == "Degraded"
                        ),
                        None,
                    )
                    phase = f"Degraded: {reason}"
                phases[phase] = phases.get(phase, 0.0) + now - last
            last = now
            if status.get("phase") == "Ready" and status.get("ready") == f"{total}/{total}":
                return time.monotonic() - started, curves
            if time.monotonic() - started > within:
                raise NotReady(f"not Ready after {within:g}s: {status.get('state')}", curves=curves)
            await asyncio.sleep(0.1)
    finally:
        stop.set()
        for watcher in watchers:
            watcher.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)


class KernelDaemonSets:
    """When a DaemonSet of SpecialResource ``sr`` for each kernel was first seen, from a
    watch: the kernel change's first figure is timed by the API server's own event, not
    by a poll's period and the poll's requests."""

    def __init__(self, client: kube.Kube, *, sr: str) -> None:
        self.first_seen: dict[str, float] = {}
        self.synced = asyncio.Event()
        self._task = asyncio.ensure_future(
            kube.informer(
                client,
                f"/apis/apps/v1/daemonsets?labelSelector=sro.dev/owner%3D{sr}",
                self._on,
                synced=self.synced,
            )
        )

    def _on(self, kind: str, ds: dict[str, Any]) -> None:
        if kind == "DELETED":
            return
        now = time.monotonic()
        selector = ((ds.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeSelector") or {}
        for value in selector.values():
            self.first_seen.setdefault(str(value), now)

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


async def kernel_change(
    client: kube.Kube,
    daemonsets: KernelDaemonSets,
    *,
    sr: str,
    node: str,
    kernel: str,
    within: float,
) -> tuple[float, float]:
    """Move ``node`` to ``kernel`` (as NFD reports after a reboot); seconds from the label
    change until a DaemonSet for that kernel exists, and until the node is complete on it
    again."""
    annotation = f"sro.dev/kernel.{sr}"
    await daemonsets.synced.wait()
    started = await nodes.change_kernel(client, node, kernel=kernel)
    ds_at: float | None = None
    while True:
        seen = daemonsets.first_seen.get(kernel)
        if ds_at is None and seen is not None:
            ds_at = max(0.0, seen - started)
        got = await client.get(f"/api/v1/nodes/{node}")
        meta = got["metadata"]
        complete = (meta.get("labels") or {}).get(f"{sr}.sro.dev/complete") == "true"
        if ds_at is not None and complete and kernel in (meta.get("annotations") or {}).get(annotation, ""):
            return ds_at, time.monotonic() - started
        if time.monotonic() - started > within:
            raise TimeoutError(f"{node} not complete on {kernel} after {within:g}s")
        await asyncio.sleep(0.05)
