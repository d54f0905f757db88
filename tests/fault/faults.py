"""The faults themselves: each does one thing to a real process or connection and says what.

The API server is killed by the pid ``hack/cluster`` recorded for it and started again by
``hack/cluster restart``; etcd is compacted by ``hack/cluster compact`` (which also empties
the API server's watch cache, so every watch resuming from before answers 410); ``sro run``
processes get real signals; network faults go through the fault proxy's control port.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import processes
from support import cluster as cluster_mod
from support import waiting


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def kill_apiserver(cluster: cluster_mod.Cluster) -> str:
    """SIGKILL kube-apiserver (no graceful drain: watches and requests just break), restart it."""
    record = json.loads((cluster.dir / "pids" / "apiserver.json").read_text())
    pid = int(record["pid"])
    os.kill(pid, signal.SIGKILL)
    waiting.wait_for_sync(lambda: not _alive(pid), timeout=10, interval=0.05, message="kube-apiserver gone")
    cluster.restart("apiserver")
    return "apiserver SIGKILL"


def compact(cluster: cluster_mod.Cluster) -> str:
    revision = cluster.compact()
    return f"etcd compacted at {revision}"


def kill_leader(fleet: processes.Fleet, *, leader: processes.Sro) -> str:
    """SIGKILL the leader (no release: the next one waits the Lease out) and start another."""
    leader.signal(signal.SIGKILL)
    leader.proc.wait(timeout=10)
    fleet.revive()
    fleet.spawn()
    return f"SIGKILL {leader.user}"


async def pause(process: processes.Sro, *, seconds: float) -> str:
    """SIGSTOP for ``seconds`` (the sleep is the fault: how long the process is frozen), SIGCONT."""
    process.signal(signal.SIGSTOP)
    stopped = time.monotonic()
    await asyncio.sleep(seconds)
    process.signal(signal.SIGCONT)
    return f"SIGSTOP {process.user} for {time.monotonic() - stopped:.0f}s"
