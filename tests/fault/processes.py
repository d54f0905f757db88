"""The processes a fault test starts: ``sro run`` replicas and the fault proxy, stopped by pid.

Every ``sro run`` started here is a new process with a client identity of its own
(``identities``), leader election on, and its own log; the ``Fleet`` keeps every one it
ever started, so the audit can map users, pids and Lease holders to each other after the
fact. A process that exits without being told to (a leader that lost its Lease exits 1,
as designed) is restarted by ``Fleet.revive``, as its Deployment would; the exit is kept
for the test to judge.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import identities
from support import waiting

REPO = Path(__file__).resolve().parents[2]
SRO = Path(os.environ.get("SRO_E2E_SRO") or REPO / ".venv" / "bin" / "sro")
FAULTPROXY = REPO / "hack" / "lib" / "faultproxy.py"
OPERATOR_NAMESPACE = "sro-system"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return int(resp.status), resp.read().decode()
    except urllib.error.HTTPError as exc:
        return int(exc.code), ""
    except OSError:
        return 0, ""


@dataclasses.dataclass(frozen=True)
class Exit:
    """A process that ended: who, its code, and whether a test asked for it."""

    user: str
    pid: int
    code: int
    asked: bool
    lost_lease: bool
    stalled: str = ""
    """Its shutdown hung and the exit watch ended it: the log from the watch's line on
    (every pending task's stack, then every thread's)."""


def _stall_report(log: str, *, lines: int = 80) -> str:
    """What the exit watch wrote, if it ended the process (``sro.runtime.exit_watch``)."""
    at = log.find("exit stalled")
    if at < 0:
        return ""
    start = log.rfind("\n", 0, at) + 1
    return "\n".join(log[start:].splitlines()[:lines])


class Sro:
    """One ``sro run`` process."""

    def __init__(self, *, identity: identities.Identity, kubeconfig: Path, log: Path) -> None:
        self.identity = identity
        self.kubeconfig = kubeconfig
        self.log = log
        self.port = free_port()
        self.asked_to_end = False
        self.paused = False
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                [
                    str(SRO), "run",
                    "--leader-elect", "true",
                    "--namespace", OPERATOR_NAMESPACE,
                    "--health-probe-bind-address", f"127.0.0.1:{self.port}",
                    "--metrics-bind-address", f"127.0.0.1:{self.port}",
                    "--log-format", "json",
                    "--workers", "4",
                ],
                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO,
            )  # fmt: skip
        self.started = time.time()

    @property
    def user(self) -> str:
        return self.identity.user

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def holds(self, holder_identity: str) -> bool:
        """Whether a Lease holderIdentity (``<host>_<pid>_<random>``) is this process's."""
        return f"_{self.pid}_" in holder_identity

    def ready(self) -> bool:
        return _get(f"http://127.0.0.1:{self.port}/readyz")[0] == 200

    def leading(self) -> bool:
        code, text = _get(f"http://127.0.0.1:{self.port}/metrics")
        return code == 200 and "\nsro_leader 1.0" in text

    def signal(self, sig: signal.Signals) -> None:
        if self.alive():
            if sig in (signal.SIGKILL, signal.SIGTERM):
                self.asked_to_end = True
            self.proc.send_signal(sig)
            self.paused = sig == signal.SIGSTOP or (self.paused and sig != signal.SIGCONT)

    def stop(self, *, timeout: float = 30) -> None:
        """SIGTERM (after SIGCONT if paused), SIGKILL if it does not end in time."""
        if not self.alive():
            return
        self.asked_to_end = True
        if self.paused:
            self.proc.send_signal(signal.SIGCONT)
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])


class Fleet:
    """Every ``sro run`` a test started, with fresh identities, restarted when they die."""

    def __init__(self, *, pki: Path, work: Path, server: str) -> None:
        self.pki = pki
        self.work = work
        self.server = server
        self.token = uuid.uuid4().hex[:6]  # users are unique to this fleet in the audit log
        self.all: list[Sro] = []
        self.exits: list[Exit] = []
        self._seen_exit: set[int] = set()

    def spawn(self) -> Sro:
        user = f"sro-fault-{self.token}-{len(self.all) + 1}"
        identity = identities.issue(pki=self.pki, out=self.work / "certs", user=user)
        config = identities.kubeconfig(
            path=self.work / f"kubeconfig-{user}",
            identity=identity,
            server=self.server,
            ca=self.pki / "ca.crt",
        )
        process = Sro(identity=identity, kubeconfig=config, log=self.work / f"{user}.log")
        self.all.append(process)
        return process

    @property
    def running(self) -> list[Sro]:
        return [p for p in self.all if p.alive()]

    def revive(self) -> list[Sro]:
        """Records every exit; starts a new process for each one no test asked for."""
        started = []
        for p in self.all:
            if p.alive() or p.pid in self._seen_exit:
                continue
            self._seen_exit.add(p.pid)
            text = p.log_text()
            self.exits.append(
                Exit(
                    user=p.user,
                    pid=p.pid,
                    code=p.proc.returncode,
                    asked=p.asked_to_end,
                    lost_lease="lost the lease" in text,
                    stalled=_stall_report(text),
                )
            )
            if not p.asked_to_end:
                started.append(self.spawn())
        return started

    def leader(self) -> Sro | None:
        self.revive()
        return next((p for p in self.running if not p.paused and p.leading()), None)

    async def wait_leader(self, *, within: float = 90) -> Sro:
        found: Sro = await waiting.wait_for(self.leader, timeout=within, message="an sro leader")
        return found

    def unexpected_exits(self) -> list[Exit]:
        """Exits no test asked for, other than a leader giving up a lost Lease (exit 1);
        a shutdown that hung counts, whatever ended it."""
        self.revive()
        return [e for e in self.exits if e.stalled or (not e.asked and not (e.code == 1 and e.lost_lease))]

    def by_user(self) -> dict[str, Sro]:
        return {p.user: p for p in self.all}

    def stop_all(self) -> None:
        for p in self.all:
            with contextlib.suppress(Exception):
                p.stop()


class FaultProxy:
    """``hack/lib/faultproxy.py`` as a process; faults are set over its control port."""

    def __init__(self, *, upstream: str, pki: Path, client_certs: Path, log: Path, seed: int) -> None:
        host_port = upstream.removeprefix("https://")
        self.log = log
        self._log_file = log.open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable, str(FAULTPROXY),
                "--upstream", host_port,
                "--pki", str(pki),
                "--client-certs", str(client_certs),
                "--seed", str(seed),
            ],
            stdout=subprocess.PIPE, stderr=self._log_file, cwd=REPO,
        )  # fmt: skip
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        line = self.proc.stdout.readline() if ready else b""
        if not line:
            self.stop()
            raise AssertionError(f"the fault proxy did not start: {log.read_text(errors='replace')[-2000:]}")
        ports = json.loads(line)
        self.listen, self.control = int(ports["listen"]), int(ports["control"])

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.listen}"

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.control}{path}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            answer: dict[str, Any] = json.loads(resp.read())
            return answer

    def set_faults(self, **faults: Any) -> dict[str, Any]:
        return self._post("/faults", faults)

    def reset_all(self) -> int:
        return int(self._post("/reset", {})["reset"])

    def stall_watches(self, *, seconds: float) -> int:
        return int(self._post("/stall", {"seconds": seconds})["stalled"])

    def half_open(self, *, watches: bool = False, user: str = "") -> int:
        """Black-holes open connections (only watches; only ``user``'s), never closing them."""
        return int(self._post("/half-open", {"watches": watches, "user": user})["half_open"])

    def release(self) -> None:
        self._post("/release", {})

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.control}/stats", timeout=10) as resp:
            found: dict[str, int] = json.loads(resp.read())
            return found

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._log_file.close()
