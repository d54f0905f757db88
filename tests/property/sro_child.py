"""A way to run ``sro`` on hostile inputs: the real command as a child process, timed and
measured by its own peak RSS.

A hostile recipe may make sro hang or balloon rather than fail; in a child process its
wall time can be bounded (it is killed after ``KILL_AFTER``) and its memory measured
apart from the test process's. The inputs are ``hostile_recipes``'s.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INVENTORY = REPO / "tests" / "golden" / "inventory.yaml"
GPU_LABEL = "feature.node.kubernetes.io/pci-10de.present"
KILL_AFTER = 60.0
"""A child still running after this long is killed (and the case fails on its wall time)."""


@dataclass(frozen=True, kw_only=True)
class Ran:
    exit_code: int | None  # None: ended by a signal
    signal: int | None
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mib: float


_PEAK_REPORTER = """\
import atexit, os, runpy, sys

def _peak():
    with open("/proc/self/status") as status, open(os.environ["SRO_TEST_PEAK_FILE"], "w") as out:
        out.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))

atexit.register(_peak)
runpy.run_module("sro", run_name="__main__", alter_sys=True)
"""
"""``python -m sro`` that writes its own peak RSS (VmHWM, kB) to a file as it exits.

``ru_maxrss`` from ``wait4`` cannot be used: a child spawned from this (large) test
process starts on the parent's address space, and at ``exec`` Linux keeps that address
space's high-water mark as the child's, so every child reported at least the RSS of
the pytest process. VmHWM counts the child's own address space only."""


def run_sro(*args: str) -> Ran:
    """``python -m sro ARGS`` (paths absolute); its exit, output, wall time and peak RSS."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile(mode="r") as peak,
    ):
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, out.fileno(), 1),
            (os.POSIX_SPAWN_DUP2, err.fileno(), 2),
        ]
        env = {**os.environ, "PYTHONPATH": str(REPO), "SRO_TEST_PEAK_FILE": peak.name}
        started = time.monotonic()
        argv = [sys.executable, "-c", _PEAK_REPORTER, *args]
        pid = os.posix_spawn(sys.executable, argv, env, file_actions=actions)
        killer = threading.Timer(KILL_AFTER, _kill, args=(pid,))
        killer.start()
        try:
            _, status, usage = os.wait4(pid, 0)
        finally:
            killer.cancel()
        seconds = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        reported = peak.read().strip()  # nothing when a signal ended it: the larger figure then
        return Ran(
            exit_code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
            seconds=seconds,
            peak_rss_mib=(int(reported) if reported.isdigit() else usage.ru_maxrss) / 1024,
        )


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
