"""A test run stopped by a signal still runs its fixtures' teardown (``simcluster.stopping``).

Each case runs a small pytest session in a process of its own whose session fixture
records its teardown, stops it with a signal once its test is running, and looks for
that record: the cluster fixture takes the control plane down the same way.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from simcluster import stopping

from support.waiting import wait_for_sync

pytestmark = pytest.mark.unit

LIB = Path(__file__).resolve().parents[2] / "hack" / "lib"

CONFTEST = """
import sys
from pathlib import Path

import pytest

sys.path.insert(0, {lib!r})
from simcluster import stopping

HERE = Path(__file__).parent


def pytest_configure():
    if {install!r}:
        stopping.install()


@pytest.fixture(scope="session")
def held():
    yield
    (HERE / "torn-down").write_text("yes")
"""

TEST = """
import threading
from pathlib import Path


def test_held(held):
    (Path(__file__).parent / "running").write_text("yes")
    threading.Event().wait(120)  # until a signal stops the run
"""


STARTED_WITH = """
import os, signal, sys
for arg in sys.argv[1:3]:
    name, how = arg.split("=")
    signal.signal(getattr(signal, name), getattr(signal, how))
os.execv(sys.argv[3], sys.argv[3:])
"""
"""Run the rest of the command line with SIGINT and SIGHUP as the first two arguments say
(``SIGINT=SIG_IGN``): each case starts from known dispositions, whatever this run has (a
suite under ``nohup`` ignores SIGHUP, and its children inherit that)."""


def _session(tmp_path: Path, *, install: bool, ignore_sigint: bool) -> subprocess.Popen[bytes]:
    (tmp_path / "conftest.py").write_text(CONFTEST.format(lib=str(LIB), install=install))
    (tmp_path / "test_held.py").write_text(textwrap.dedent(TEST))
    # SIGINT ignored as a non-interactive shell's `&` starts a job; else both as by default.
    sigint = "SIG_IGN" if ignore_sigint else "SIG_DFL"
    dispositions = [sys.executable, "-c", STARTED_WITH, f"SIGINT={sigint}", "SIGHUP=SIG_DFL"]
    pytest_argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)]
    return subprocess.Popen(
        [*dispositions, *pytest_argv],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # the signal goes to it alone
    )


def _stop(proc: subprocess.Popen[bytes], tmp_path: Path, sig: signal.Signals) -> str:
    try:
        wait_for_sync((tmp_path / "running").exists, timeout=60, message="the test running")
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()  # reaped, and its pipe closed
    return out.decode(errors="replace")


@pytest.mark.parametrize(
    ("sig", "ignore_sigint"),
    [(signal.SIGTERM, False), (signal.SIGHUP, False), (signal.SIGINT, True)],
    ids=["sigterm", "sighup", "sigint-while-ignored"],
)
def test_a_run_stopped_by_a_signal_runs_its_session_teardown(
    tmp_path: Path, sig: signal.Signals, ignore_sigint: bool
) -> None:
    proc = _session(tmp_path, install=True, ignore_sigint=ignore_sigint)
    out = _stop(proc, tmp_path, sig)
    assert (tmp_path / "torn-down").exists(), out
    assert proc.returncode != 0, out  # an interrupted run is no success
    assert "KeyboardInterrupt" in out, out


def test_without_it_sigterm_ends_the_run_before_its_teardown(tmp_path: Path) -> None:
    """What the helper is for: pytest alone dies on SIGTERM with the fixture still held."""
    proc = _session(tmp_path, install=False, ignore_sigint=False)
    _stop(proc, tmp_path, signal.SIGTERM)
    assert proc.returncode == -signal.SIGTERM
    assert not (tmp_path / "torn-down").exists()


def test_a_sighup_ignored_from_the_start_stays_ignored() -> None:
    """``nohup hack/test``: closing the terminal must not stop the run."""
    before = {sig: signal.getsignal(sig) for sig in stopping.STOPPING}
    try:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        stopping.install()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.default_int_handler
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        stopping.install()
        assert signal.getsignal(signal.SIGHUP) is signal.default_int_handler
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
