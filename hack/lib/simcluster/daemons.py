"""Starting and stopping the cluster's long-running processes, by pid only.

Every process ``up`` starts is recorded in ``<run>/pids/<name>.json`` with its pid
and kernel start time, so ``down`` and ``restart`` stop exactly what was started
(a recycled pid is recognised and left alone) and never look processes up by name.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import time
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class Record:
    """What is needed to recognise, stop and restart one started process."""

    name: str
    pid: int
    start_ticks: int
    argv: tuple[str, ...]
    log: str


TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat from field 3 (the state) on, or None if no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) may contain spaces; fields after it are space-separated.
    return stat[stat.rindex(")") + 2 :].split()


def _start_ticks(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (start time since boot), or None if no such live process."""
    rest = _stat(pid)
    if rest is None or rest[0] == "Z":  # a zombie is as good as gone
        return None
    return int(rest[19])


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time ``pid`` has used (fields 14 and 15 of /proc/<pid>/stat),
    or None if no such process."""
    rest = _stat(pid)
    return None if rest is None else (int(rest[11]) + int(rest[12])) / TICK


def cpu_by_name(pid_dir: Path, since: dict[str, float] | None = None) -> dict[str, float]:
    """CPU seconds every recorded process still running has used, by name; with ``since``
    (an earlier reading), what each used after it."""
    out = {}
    for record in load_all(pid_dir):
        spent = cpu_seconds(record.pid) if alive(record) else None
        if spent is not None and (since is None or record.name in since):
            out[record.name] = spent - (since[record.name] if since is not None else 0.0)
    return out


def start(
    *, name: str, argv: list[str], pid_dir: Path, log: Path, env: dict[str, str] | None = None
) -> Record:
    """Starts ``argv`` detached (own session, output to ``log``) and records it."""
    pid_dir.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            close_fds=True,
        )
    ticks = _start_ticks(proc.pid)
    record = Record(name=name, pid=proc.pid, start_ticks=ticks or 0, argv=tuple(argv), log=str(log))
    (pid_dir / f"{name}.json").write_text(json.dumps(dataclasses.asdict(record)))
    # The Popen object is dropped on purpose: the process outlives this command.
    proc.returncode = 0
    return record


def load(pid_dir: Path, name: str) -> Record | None:
    try:
        data = json.loads((pid_dir / f"{name}.json").read_text())
    except FileNotFoundError:
        return None
    data["argv"] = tuple(data["argv"])
    return Record(**data)


def load_all(pid_dir: Path) -> list[Record]:
    if not pid_dir.is_dir():
        return []
    out = []
    for path in sorted(pid_dir.glob("*.json")):
        record = load(pid_dir, path.stem)
        if record is not None:
            out.append(record)
    return out


def alive(record: Record) -> bool:
    """True while the recorded process (same pid *and* start time) is running."""
    return _start_ticks(record.pid) == record.start_ticks


def stop(record: Record, *, pid_dir: Path | None = None, grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds; only if it is still the recorded process."""
    if alive(record):
        with contextlib.suppress(ProcessLookupError):
            os.kill(record.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while alive(record) and time.monotonic() < deadline:
            time.sleep(0.05)
        if alive(record):
            with contextlib.suppress(ProcessLookupError):
                os.kill(record.pid, signal.SIGKILL)
            deadline = time.monotonic() + 5
            while alive(record) and time.monotonic() < deadline:
                time.sleep(0.05)
    if pid_dir is not None:
        (pid_dir / f"{record.name}.json").unlink(missing_ok=True)


def send(record: Record, sig: signal.Signals) -> bool:
    """Sends ``sig`` (SIGSTOP, SIGCONT, …) to the recorded process if it is still that one."""
    if not alive(record):
        return False
    try:
        os.kill(record.pid, sig)
    except ProcessLookupError:
        return False
    return True


def rss_bytes(record: Record) -> int | None:
    """Resident memory of a live recorded process (VmRSS), for benchmarks."""
    if not alive(record):
        return None
    for line in Path(f"/proc/{record.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return None
