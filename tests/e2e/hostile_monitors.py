"""Background monitors of a running operator: its ``/healthz`` latency and its Lease renewals.

Each runs in a thread for as long as a suite runs, so a stall between two assertions
(a render holding the event loop, a renewal missed while a worker is busy) is seen
even when every check made at a given moment passes.
"""

from __future__ import annotations

import datetime
import subprocess
import sys
import threading

from support import cluster as cluster_mod

HEALTH_LIMIT = 1.0
"""Seconds ``/healthz`` may take to answer, ever."""


_PROBE = """
import sys, time, urllib.request
url, every = sys.argv[1], float(sys.argv[2])
while True:
    began = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            resp.read()
            what = "ok" if resp.status == 200 else f"status-{resp.status}"
    except OSError as exc:
        what = type(exc).__name__
    latency = time.monotonic() - began
    print(f"{time.strftime('%H:%M:%S')} {latency:.3f} {what}", flush=True)
    time.sleep(max(0.0, every - latency))
"""


class HealthProbe:
    """``GET /healthz`` every ``every`` seconds; the slowest answer and every failure.

    The requests come from a process of their own, so what they measure is the operator's
    answer, not the test process's own pauses (its threads share one interpreter lock).
    """

    def __init__(self, url: str, *, every: float = 0.2) -> None:
        self.url = url
        self.every = every
        self.max_latency = 0.0
        self.probes = 0
        self.failures: list[str] = []
        self.slow: list[str] = []  # answers over a quarter of the limit, for the report
        self._proc: subprocess.Popen[str] | None = None
        self._thread = threading.Thread(target=self._run, name="healthz-probe", daemon=True)

    def start(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _PROBE, self.url, str(self.every)], stdout=subprocess.PIPE, text=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()  # the probe this monitor started, by its handle
            self._thread.join(timeout=10)
            self._proc.wait(timeout=10)

    def _run(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        with self._proc.stdout:
            for line in self._proc.stdout:
                stamp, seconds, what = line.split()
                latency = float(seconds)
                self.probes += 1
                self.max_latency = max(self.max_latency, latency)
                if latency >= HEALTH_LIMIT / 4:
                    self.slow.append(f"{stamp} {latency:.2f}s")
                if what != "ok" or latency >= HEALTH_LIMIT:
                    self.failures.append(f"{stamp} {what} after {latency:.2f}s")


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
        self._thread.join(timeout=10)

    def _run(self) -> None:
        template = '{.spec.renewTime} {.spec.holderIdentity}{"\\n"}'
        command = [
            str(self.cluster.kubectl_path),
            f"--kubeconfig={self.cluster.kubeconfig}",
            "get",
            "lease",
            self.name,
            "-n",
            self.namespace,
            "-w",
            "-o",
            f"jsonpath={template}",
        ]
        while not self._stop.is_set():  # a watch the server ends is opened again
            with subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
            ) as proc:
                self._proc = proc
                assert proc.stdout is not None
                for line in proc.stdout:
                    parts = line.split()
                    if len(parts) == 2:
                        self._record(_renew_time(parts[0]), parts[1])
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
