"""Background monitors of a running operator: its ``/healthz`` latency and its Lease renewals.

Each runs in a thread for as long as a suite runs, so a stall between two assertions
(a render holding the event loop, a renewal missed while a worker is busy) is seen
even when every check made at a given moment passes.
"""

from __future__ import annotations

import datetime
import subprocess
import threading
import time
import urllib.error
import urllib.request

from support import cluster as cluster_mod

HEALTH_LIMIT = 1.0
"""Seconds ``/healthz`` may take to answer, ever."""


class HealthProbe:
    """``GET /healthz`` every ``every`` seconds in a thread; the slowest answer and every failure."""

    def __init__(self, url: str, *, every: float = 0.2) -> None:
        self.url = url
        self.every = every
        self.max_latency = 0.0
        self.probes = 0
        self.failures: list[str] = []
        self.slow: list[str] = []  # answers over a quarter of the limit, for the report
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="healthz-probe", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                with urllib.request.urlopen(self.url, timeout=5) as resp:
                    ok = resp.status == 200
                    resp.read()
                what = "" if ok else f"status {resp.status}"
            except (urllib.error.URLError, OSError) as exc:
                what = f"{type(exc).__name__}: {exc}"
            latency = time.monotonic() - began
            self.probes += 1
            self.max_latency = max(self.max_latency, latency)
            if latency >= HEALTH_LIMIT / 4:
                self.slow.append(f"{time.strftime('%H:%M:%S')} {latency:.2f}s")
            if what or latency >= HEALTH_LIMIT:
                self.failures.append(f"{time.strftime('%H:%M:%S')} {what or f'took {latency:.2f}s'}")
            self._stop.wait(max(0.0, self.every - latency))


def _renew_time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


class LeaseWatch:
    """``kubectl get lease -w`` in a thread: every renewTime and holder the Lease showed."""

    def __init__(self, cluster: cluster_mod.Cluster, *, namespace: str, name: str = "sro-leader") -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.name = name
        self.renewals: list[tuple[datetime.datetime, str]] = []
        self.max_gap = 0.0
        self._stop = threading.Event()
        self._proc: subprocess.Popen[str] | None = None
        self._thread = threading.Thread(target=self._run, name="lease-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()  # the watch this monitor started, by its handle
            self._proc.wait(timeout=10)
        self._thread.join(timeout=10)

    def _run(self) -> None:
        template = '{.spec.renewTime} {.spec.holderIdentity}{"\\n"}'
        while not self._stop.is_set():
            self._proc = subprocess.Popen(
                [str(self.cluster.kubectl_path), f"--kubeconfig={self.cluster.kubeconfig}", "get", "lease",
                 self.name, "-n", self.namespace, "-w", "-o", f"jsonpath={template}"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            )
            assert self._proc.stdout is not None
            for line in self._proc.stdout:
                parts = line.split()
                if len(parts) == 2:
                    self._record(_renew_time(parts[0]), parts[1])
            self._proc.wait()
            self._stop.wait(0.5)

    def _record(self, renewed: datetime.datetime, holder: str) -> None:
        if self.renewals and renewed > self.renewals[-1][0]:
            self.max_gap = max(self.max_gap, (renewed - self.renewals[-1][0]).total_seconds())
        if not self.renewals or renewed != self.renewals[-1][0]:
            self.renewals.append((renewed, holder))

    def since_last(self) -> float:
        if not self.renewals:
            return float("inf")
        return (datetime.datetime.now(datetime.UTC) - self.renewals[-1][0]).total_seconds()

    def holders(self) -> set[str]:
        return {holder for _, holder in self.renewals}
