"""The operator as a real subprocess (``sro run``) against the test cluster.

One operator serves every end-to-end test of a session; tests keep apart by their own
nodes (unique pool labels) and their own SpecialResource names. Drop-in recipes written by
tests go to ``recipes_dir``, which the operator searches before the built-in recipes.
Metrics come from its ``/metrics`` endpoint, the same one an administrator would scrape.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from support import waiting

REPO = Path(__file__).resolve().parents[2]
# The operator binary: the project's virtualenv, unless SRO_E2E_SRO names another build.
SRO = Path(os.environ.get("SRO_E2E_SRO") or REPO / ".venv" / "bin" / "sro")

_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Operator:
    """``sro run`` in the background: start, stop by pid, restart, read metrics and logs."""

    def __init__(
        self, *, kubeconfig: Path, recipes_dir: Path, log_dir: Path, extra_args: Sequence[str] = ()
    ) -> None:
        self.kubeconfig = kubeconfig
        self.extra_args = tuple(extra_args)  # after the defaults, so they override them
        self.recipes_dir = recipes_dir
        self.log_dir = log_dir
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"operator-{self.starts}.log"

    def start(self, *, timeout: float = 60) -> None:
        self.starts += 1
        env = dict(os.environ)
        env.update(KUBECONFIG=str(self.kubeconfig), SRO_RECIPE_DIRS=str(self.recipes_dir))
        with self.log_path.open("wb") as out:
            self.proc = subprocess.Popen(
                [
                    str(SRO),
                    "run",
                    "--leader-elect",
                    "false",
                    "--health-probe-bind-address",
                    f"127.0.0.1:{self.port}",
                    "--metrics-bind-address",
                    f"127.0.0.1:{self.port}",
                    "--recipes",
                    str(self.recipes_dir),
                    "--log-format",
                    "json",
                    "--workers",
                    "4",
                    *self.extra_args,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=REPO,
            )
        try:
            waiting.wait_for_sync(
                lambda: self.ready() or self.proc.poll() is not None,
                timeout=timeout,
                message="sro run ready",
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}:\n{self.log_tail()}") from None
        if self.proc.poll() is not None:
            raise AssertionError(f"sro run exited {self.proc.returncode}:\n{self.log_tail()}")

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=2) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def stop(self, *, timeout: float = 30) -> int:
        """SIGTERM by pid, then wait; the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=10)

    def restart(self) -> None:
        self.stop()
        self.start()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def metrics(self) -> list[tuple[str, dict[str, str], float]]:
        """Every sample of ``/metrics`` as (name, labels, value)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
        samples = []
        for line in text.splitlines():
            match = _SAMPLE.match(line.strip())
            if not match or line.startswith("#"):
                continue
            labels = dict(_LABEL.findall(match.group("labels") or ""))
            samples.append((match.group("name"), labels, float(match.group("value"))))
        return samples

    def writes(self) -> float:
        """API requests that change something (every verb but get/list/watch), summed."""
        return sum(
            value
            for name, labels, value in self.metrics()
            if name == "sro_api_requests_total" and labels.get("verb") not in ("get", "list", "watch")
        )

    def reconciles(self) -> float:
        """Reconciles it has run, of every key."""
        return sum(v for n, _, v in self.metrics() if n == "sro_reconcile_total")

    def idle(self) -> bool:
        """Whether it has reconciled at least once and holds no work now (queue empty, no
        worker busy): what it decides from the cluster as it stands is done."""
        values = {(n, tuple(sorted(labels.items()))): v for n, labels, v in self.metrics()}
        reconciled = sum(v for (n, _), v in values.items() if n == "sro_reconcile_total")
        depth = values.get(("sro_workqueue_depth", ()), 1.0)
        active = values.get(("sro_active_workers", ()), 1.0)
        return reconciled >= 1 and depth == 0 and active == 0
