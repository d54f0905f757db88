"""Where kube-apiserver's CPU goes while a phase of a benchmark runs.

On a machine whose cores the operator and the control plane share, what an operator's
requests and watches cost the API server is as much its footprint as its own CPU. The
CPU figures per process say how much; a profile says on what (field management, merge
patches, encoding watch events, etcd, TLS), which is what tells a cost the operator can
change from one the contract makes it pay.

``Profiler`` takes back-to-back CPU profiles from ``/debug/pprof/profile`` (the cluster
started with ``hack/cluster up --profiling``) for as long as its ``async with`` block
runs; each is short (``CHUNK`` seconds) because the API server ends a request that runs
longer than its timeout. ``merge`` joins them with ``go tool pprof`` and ``top`` prints
the functions that used the most CPU, flat and with their callees.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

from simcluster import kube, layout

CHUNK = 20  # seconds per profile: well inside kube-apiserver's 60 s request timeout


class Profiler:
    """CPU profiles of kube-apiserver, back to back, while the block runs."""

    def __init__(self, client: kube.Kube, *, out: Path, name: str) -> None:
        self._client = client
        self._dir = out / f"{name}-pprof"
        self.merged = out / f"{name}-apiserver.pprof"
        self._stop = asyncio.Event()
        self._task: asyncio.Task[list[Path]] | None = None

    async def __aenter__(self) -> Profiler:
        shutil.rmtree(self._dir, ignore_errors=True)
        self._dir.mkdir(parents=True)
        self._task = asyncio.create_task(self._take())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._task is not None
        # The profile under way ends by itself within CHUNK seconds: keep it, it is the phase's end.
        chunks = await self._task
        if chunks:
            merge(chunks, self.merged)

    async def _take(self) -> list[Path]:
        chunks: list[Path] = []
        while not self._stop.is_set():
            path = self._dir / f"{len(chunks):04d}.pprof"
            try:
                profile = await self._client.get_bytes(
                    f"/debug/pprof/profile?seconds={CHUNK}", request_seconds=CHUNK + 30
                )
            except TimeoutError:
                continue  # one chunk lost to a slow answer; the next may come
            except kube.ApiError as exc:  # no pprof (a cluster up without --profiling): stop asking
                print(f"no kube-apiserver profile for {path.parent.name}: {exc.status}", flush=True)
                break
            path.write_bytes(profile)
            chunks.append(path)
        return chunks


def _go_pprof(*args: str) -> subprocess.CompletedProcess[str]:
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("go is not on PATH: go tool pprof reads the profiles")
    return subprocess.run([go, "tool", "pprof", *args], check=True, capture_output=True, text=True)


def merge(chunks: list[Path], out: Path) -> Path:
    """One profile of every chunk's samples (``go tool pprof -proto``)."""
    _go_pprof("-proto", f"-output={out}", *map(str, chunks))
    return out


def top(profile: Path, *, entries: int = 25, cumulative: bool = False) -> str:
    """``go tool pprof -top`` of ``profile`` against the kube-apiserver binary."""
    flags = ["-top", f"-nodecount={entries}", *(["-cum"] if cumulative else [])]
    return _go_pprof(*flags, str(layout.binary("kube-apiserver")), str(profile)).stdout
