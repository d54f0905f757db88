"""Leader election between real operator processes (hack/bench.d/runtime_operator.py).

Covers: of two processes exactly one leads; ``kill -9`` of the leader hands over
after the lease expires; SIGTERM of the leader releases the lease and a standby
takes over within seconds; a leader whose lease is taken from it exits non-zero;
and, from the merged write audit, two processes never wrote at the same time.
Takeover times are printed, not asserted.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from support import waiting

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "hack" / "bench.d" / "runtime_operator.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Operator:
    def __init__(self, cluster: Any, namespace: str, identity: str, audit: Path, log_dir: Path) -> None:
        self.identity = identity
        self.port = free_port()
        self.log = (log_dir / f"{identity}.log").open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(PROGRAM),
                "--namespace",
                namespace,
                "--identity",
                identity,
                "--port",
                str(self.port),
                "--audit",
                str(audit),
                "--kubeconfig",
                str(cluster.kubeconfig),
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()
        except OSError:
            return 0, ""

    def leading(self) -> bool:
        code, text = self.get("/metrics")
        return code == 200 and "\nsro_leader 1.0" in text

    def role(self) -> str:
        code, text = self.get("/readyz")
        return text.strip() if code == 200 else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()


def audit_of(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def assert_never_two_writers(records: list[dict[str, Any]]) -> list[str]:
    """Writes of different processes never overlap, and each process writes in one block."""
    records = sorted(records, key=lambda r: r["start"])
    blocks: list[str] = []
    last_end: dict[str, float] = {}
    for r in records:
        for other, end in last_end.items():
            if other != r["id"]:
                assert end <= r["start"], f"{r['id']} wrote while {other} was still writing"
        if not blocks or blocks[-1] != r["id"]:
            assert r["id"] not in blocks, f"{r['id']} wrote again after another leader: {blocks}"
            blocks.append(r["id"])
        last_end[r["id"]] = r["end"]
    return blocks


async def test_one_leader_at_a_time_through_kill_and_sigterm(
    cluster: Any, namespace: str, tmp_path: Path
) -> None:
    cluster.kubectl("create", "configmap", "tick", "-n", namespace)
    audit = tmp_path / "audit.jsonl"
    ops = [Operator(cluster, namespace, name, audit, tmp_path) for name in ("a", "b")]
    try:
        leader = await waiting.wait_for(
            lambda: next((o for o in ops if o.leading()), None), timeout=60, message="a leader"
        )
        standby = next(o for o in ops if o is not leader)
        await waiting.wait_for(lambda: standby.role() == "standby", timeout=30, message="the other stands by")
        writes = len(audit_of(audit))
        await waiting.wait_for(
            lambda: len(audit_of(audit)) >= writes + 10, timeout=30, message="leader writing"
        )
        assert not standby.leading()
        assert {r["id"] for r in audit_of(audit)} == {leader.identity}

        # kill -9: no release, the standby waits out the lease.
        killed_at = time.monotonic()
        os.kill(leader.proc.pid, signal.SIGKILL)
        leader.proc.wait(10)
        await waiting.wait_for(standby.leading, timeout=60, message="takeover after kill -9")
        after_kill = time.monotonic() - killed_at

        third = Operator(cluster, namespace, "c", audit, tmp_path)
        ops.append(third)
        await waiting.wait_for(lambda: third.role() == "standby", timeout=60, message="new standby")
        seen = len(audit_of(audit))
        await waiting.wait_for(
            lambda: len(audit_of(audit)) >= seen + 5, timeout=30, message="new leader writing"
        )

        # SIGTERM: the leader releases the lease on its way out.
        termed_at = time.monotonic()
        standby.proc.send_signal(signal.SIGTERM)
        await waiting.wait_for(third.leading, timeout=30, message="takeover after SIGTERM")
        after_term = time.monotonic() - termed_at
        assert standby.proc.wait(30) == 0, "a clean shutdown exits 0"
        seen = len(audit_of(audit))
        await waiting.wait_for(
            lambda: len(audit_of(audit)) >= seen + 5, timeout=30, message="third leader writing"
        )
        third.proc.send_signal(signal.SIGTERM)
        assert third.proc.wait(30) == 0

        blocks = assert_never_two_writers(audit_of(audit))
        assert blocks == [leader.identity, standby.identity, third.identity]
        lease = cluster.kubectl_json("get", "lease", "runtime-test-leader", "-n", namespace)
        print(
            f"\ntakeover after kill -9: {after_kill:.1f} s (lease 15 s + retry 2 s); "
            f"after SIGTERM: {after_term:.1f} s; writes audited: {len(audit_of(audit))}; "
            f"lease transitions: {lease['spec'].get('leaseTransitions')}"
        )
    finally:
        for o in ops:
            o.stop()


async def test_a_leader_whose_lease_is_taken_exits_non_zero(
    cluster: Any, namespace: str, tmp_path: Path
) -> None:
    cluster.kubectl("create", "configmap", "tick", "-n", namespace)
    audit = tmp_path / "audit.jsonl"
    op = Operator(cluster, namespace, "only", audit, tmp_path)
    try:
        await waiting.wait_for(op.leading, timeout=60, message="leading")
        lease = cluster.kubectl_json("get", "lease", "runtime-test-leader", "-n", namespace)
        lease["spec"]["holderIdentity"] = "thief"
        lease["spec"]["leaseDurationSeconds"] = 300
        cluster.kubectl("replace", "-f", "-", input=json.dumps(lease))
        stolen_at = time.time()
        code = await waiting.wait_for(
            lambda: op.proc.poll() is not None, timeout=30, message="exit after losing"
        )
        assert code and op.proc.returncode == 1
        late = [r for r in audit_of(audit) if r["start"] > stolen_at + 2.5]
        assert not late, "wrote after losing the lease (beyond one retry period)"
    finally:
        op.stop()
