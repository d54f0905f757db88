"""A process whose exit hangs still exits, and its log names what held it up.

Each case runs a small Python process (the watch ends the process it runs in)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

HUNG = textwrap.dedent(
    """
    import asyncio, threading, time
    from sro.observe import logs
    from sro.runtime import exit_watch

    logs.configure(format="json")

    async def stuck_in_cleanup():
        while True:  # swallows every cancellation: what a hung shutdown looks like
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                pass

    def blocked_helper_thread():
        time.sleep(3600)

    async def main():
        threading.Thread(target=blocked_helper_thread, daemon=True).start()
        task = asyncio.create_task(stuck_in_cleanup())
        await asyncio.sleep(0)
        exit_watch.ExitWatch().arm(seconds=0.5, why="lost the lease")
        task.cancel()
        await task  # never returns

    asyncio.run(main())
    """
)

PROMPT = textwrap.dedent(
    """
    import asyncio
    from sro.runtime import exit_watch

    async def main():
        exit_watch.ExitWatch().arm(seconds=30, why="stop requested")
        await asyncio.sleep(0.05)

    asyncio.run(main())
    print("exited by itself")
    """
)

DISARMED = textwrap.dedent(
    """
    import time
    from sro.runtime import exit_watch

    watch = exit_watch.ExitWatch()
    watch.arm(seconds=0.2, why="stop requested")
    watch.arm(seconds=30, why="a second request keeps the first deadline")
    watch.disarm()
    time.sleep(0.6)
    print("still here")
    """
)


def _python(code: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    return done, time.monotonic() - started


pytestmark = pytest.mark.unit


def test_a_hung_exit_ends_the_process_with_1_and_logs_the_stuck_task_and_thread() -> None:
    done, seconds = _python(HUNG)
    assert done.returncode == 1, done.stderr
    assert seconds < 20
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    stalled = [line for line in lines if line.get("event") == "exit stalled: exiting now"]
    assert len(stalled) == 1, done.stderr
    assert stalled[0]["why"] == "lost the lease"
    assert any("stuck_in_cleanup" in stack for stack in stalled[0]["tasks"]), stalled[0]["tasks"]
    # every thread's stack, the blocked one's included (the main thread's loop may be idle)
    assert "blocked_helper_thread" in done.stderr, done.stderr


def test_a_process_that_exits_in_time_is_not_held_up_or_killed() -> None:
    done, seconds = _python(PROMPT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("exited by itself")
    assert seconds < 20  # the 30 s timer thread did not keep the process


def test_a_disarmed_watch_never_fires() -> None:
    done, _ = _python(DISARMED)
    assert done.returncode == 0, done.stderr
    assert "still here" in done.stdout
