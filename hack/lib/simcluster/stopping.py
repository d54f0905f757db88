"""A test run or a benchmark stopped by a signal unwinds as one stopped by Ctrl-C.

Whatever brought a cluster up takes it down again in a ``finally`` block or a fixture's
teardown, and both run when the process is interrupted (``KeyboardInterrupt``): pytest
runs every fixture's teardown then, so the operators the end-to-end suites started are
stopped too. SIGTERM (``timeout(1)``, a cancelled CI job, a ``kill`` of the run's process
group) and SIGHUP (a closed terminal) would instead end the process on the spot; the
control plane, started in sessions of its own, would keep running with nobody left to
stop it. A run started as a background job of a non-interactive shell begins with SIGINT
ignored, so Ctrl-C's own signal is set too. A SIGHUP ignored from the start (``nohup``)
stays ignored: the run was asked to outlive its terminal.
"""

from __future__ import annotations

import signal

STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
KEPT_IGNORED = frozenset({signal.SIGHUP})
"""Signals left alone when the process started with them ignored."""


def install() -> None:
    """Turn each of ``STOPPING`` into ``KeyboardInterrupt`` in the main thread, but for
    ``KEPT_IGNORED`` ones that are ignored."""
    for sig in STOPPING:
        if sig in KEPT_IGNORED and signal.getsignal(sig) is signal.SIG_IGN:
            continue
        signal.signal(sig, signal.default_int_handler)
