"""What a simulated container's log says, and when a known driver's ready line appears.

kwok serves a pod's log from a file that a ``Logs`` object names (devsim writes both,
``serve``). A test may choose the lines (the pod annotation ``sim.sro.dev/logs``); an image
in ``IMAGE_LOGS`` prints what its real container prints; every other container prints the
default log (``kwok_config.default_log_lines``).

A real driver container is Running and Ready long before it has built and loaded its
modules: the NVIDIA driver prints ``Done, now waiting for signal`` minutes after it starts,
which is why recipes wait for that line and not for readiness. So a known image's log
holds only its build output at first; devsim records when its build ends in the pod's
annotation ``sim.sro.dev/built-at`` (after ``sim.sro.dev/build-seconds`` set on the pod, or
a draw from the cluster's ``State.build_seconds`` range), and ``Builds`` writes the whole
log at that moment. A devsim restarted meanwhile finds the annotation on its pods and
finishes each build when it is due, so no driver is left building forever.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import fnmatch
import logging
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simcluster import controlplane, inventory, kwok_config, layout

SIM = inventory.SIM
LOGS = f"{SIM}/logs"
BUILD_SECONDS = f"{SIM}/build-seconds"
BUILT_AT = f"{SIM}/built-at"

IMAGE_LOGS: tuple[tuple[str, str], ...] = (
    # The NVIDIA driver container builds and loads its modules, then says so and waits.
    ("nvcr.io/nvidia/driver:*", "Done, now waiting for signal"),
)
"""Images whose real containers print a known ready line: the simulator prints it once the
pod's build time has passed, after tens of KiB of build output, with more output after it,
as the real image does."""

log = logging.getLogger("devsim")


@dataclass(frozen=True)
class KnownLog:
    """The log of an image in ``IMAGE_LOGS``, before and after its build."""

    ready: str

    def lines(self, *, built: bool) -> list[str]:
        building = kwok_config.build_output(48 * 1024)
        if not built:
            return building
        return [*building, self.ready, *kwok_config.build_output(4 * 1024, prefix="nvidia-persistenced:")]


def known_log(pod: Mapping[str, Any]) -> KnownLog | None:
    """The known log of the pod's first container whose image is in ``IMAGE_LOGS``."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        image = str(container.get("image", ""))
        for pattern, ready in IMAGE_LOGS:
            if fnmatch.fnmatchcase(image, pattern):
                return KnownLog(ready=ready)
    return None


def build_seconds(annotations: Mapping[str, str], *, default: tuple[float, float]) -> float:
    """The pod's own ``sim.sro.dev/build-seconds`` (a number, 0 or more), else a uniform draw
    from the cluster's ``default`` range (an unreadable annotation counts as unset)."""
    raw = annotations.get(BUILD_SECONDS)
    if raw is not None:
        try:
            chosen = float(raw)
        except ValueError:
            log.warning("unreadable %s %r: using the cluster's range", BUILD_SECONDS, raw)
        else:
            if chosen >= 0:
                return chosen
    low, high = default
    return random.uniform(low, high)


def build_range(text: str) -> tuple[float, float]:
    """``MIN-MAX`` seconds (or one number for both), 0 <= MIN <= MAX: an argparse type."""
    low, _, high = text.partition("-")
    try:
        bounds = (float(low), float(high or low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: seconds as MIN-MAX, e.g. 1-4") from None
    if not 0 <= bounds[0] <= bounds[1]:
        raise argparse.ArgumentTypeError(f"{text!r}: 0 <= MIN <= MAX")
    return bounds


def add_build_seconds(parser: argparse.ArgumentParser, *, help: str) -> None:
    """``--build-seconds MIN-MAX``, defaulting to the cluster's (``State.build_seconds``)."""
    parser.add_argument(
        "--build-seconds",
        type=build_range,
        default=controlplane.State.build_seconds,
        metavar="MIN-MAX",
        help=help,
    )


def stamp(at: float) -> str:
    """A wall-clock time as the annotation holds it (RFC 3339, microseconds, UTC)."""
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def read_stamp(text: str | None) -> float | None:
    """``stamp``'s text back as seconds since the epoch; None if unset or unreadable."""
    if not text:
        return None
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
    except ValueError:
        return None


def path_of(run: layout.RunDir, pod: Mapping[str, Any]) -> Path:
    meta = pod["metadata"]
    return run.pod_logs / str(meta["namespace"]) / f"{meta['name']}.{meta['uid']}.log"


def write(path: Path, lines: list[str]) -> None:
    """The lines as a CRI log file, replaced whole so kwok never serves half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text("".join(kwok_config.cri_line(line) for line in lines))
    os.replace(partial, path)


class Builds:
    """Writes each known driver's whole log when the time in its ``built-at`` comes."""

    def __init__(self, run: layout.RunDir) -> None:
        self.run = run
        self.pending: dict[str, asyncio.TimerHandle] = {}  # pod uid -> the build's end
        self.finished: set[str] = set()  # pod uids whose whole log is written

    def on_pod(self, kind: str, pod: Mapping[str, Any]) -> None:
        meta = pod["metadata"]
        uid = str(meta["uid"])
        if kind == "DELETED":
            handle = self.pending.pop(uid, None)
            if handle is not None:
                handle.cancel()
            self.finished.discard(uid)
            return
        if uid in self.pending or uid in self.finished:
            return
        at = read_stamp((meta.get("annotations") or {}).get(BUILT_AT))
        if at is None:  # most pods, on most of their events: no image match needed
            return
        known = known_log(pod)
        if known is None:
            return
        delay = max(0.0, at - datetime.datetime.now(datetime.UTC).timestamp())
        loop = asyncio.get_running_loop()
        self.pending[uid] = loop.call_later(delay, self.finish, uid, path_of(self.run, pod), known)

    def finish(self, uid: str, path: Path, known: KnownLog) -> None:
        """The build is over: the whole log, unless the pod's log is gone or whole already."""
        self.pending.pop(uid, None)
        self.finished.add(uid)
        try:
            if known.ready in path.read_text():
                return
        except FileNotFoundError:
            return  # deleted meanwhile
        write(path, known.lines(built=True))
        log.info("pod log %s: build done, ready line written", path.name)

    def reset(self) -> None:
        """Forget everything (the pods are listed again, and each is looked at anew)."""
        for handle in self.pending.values():
            handle.cancel()
        self.pending.clear()
        self.finished.clear()
