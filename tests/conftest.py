"""Fixtures for tests that need the real local cluster: ``cluster``, ``namespace``, ``node_pool``.

Unit and property tests never touch them, so ``pytest -m unit`` builds and starts
nothing. The first test that asks for ``cluster`` reuses the cluster running in
``SRO_CLUSTER_DIR`` (default ``.run/cluster``) if there is one - fast local loops with
``hack/cluster up`` once - or brings one up there and takes it down when the last test
session using it ends.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # so ``tests.support`` resolves as well as ``support``
    sys.path.append(str(REPO))

from support import cluster as cluster_mod  # noqa: E402
from support import pools, waiting  # noqa: E402


def _session_token(run_dir: Path) -> Path:
    sessions = run_dir / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    token = sessions / f"{os.getpid()}"
    token.write_text(str(time.time()))
    return token


def _other_sessions(run_dir: Path, mine: Path) -> list[Path]:
    """Session tokens of other live test processes using this cluster."""
    live = []
    for token in (run_dir / "sessions").glob("*"):
        if token == mine or not token.name.isdigit():
            continue
        if Path(f"/proc/{token.name}").exists():
            live.append(token)
        else:
            token.unlink(missing_ok=True)
    return live


@pytest.fixture(scope="session")
def cluster() -> Iterator[cluster_mod.Cluster]:
    """The real local cluster, reused if running, else started for this session (and stopped after)."""
    handle = cluster_mod.Cluster()
    started_here = False
    if not handle.is_running():
        handle.run("up")
        (handle.dir / "started-by-tests").write_text(str(os.getpid()))
        started_here = True
    token = _session_token(handle.dir)
    previous = os.environ.get("KUBECONFIG")
    os.environ["KUBECONFIG"] = str(handle.kubeconfig)
    try:
        yield handle
    finally:
        if previous is None:
            os.environ.pop("KUBECONFIG", None)
        else:
            os.environ["KUBECONFIG"] = previous
        token.unlink(missing_ok=True)
        # Take down only a cluster that a test session started, once no other session uses it.
        started_by_tests = started_here or (handle.dir / "started-by-tests").exists()
        if started_by_tests and not _other_sessions(handle.dir, token):
            handle.run("down")


def unique_name(prefix: str) -> str:
    """A DNS-label name that no other test (or test session) uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def namespace(cluster: cluster_mod.Cluster) -> Iterator[str]:
    """A fresh namespace (its default ServiceAccount ready), deleted after the test."""
    name = unique_name("t")
    cluster.kubectl("create", "namespace", name)
    waiting.wait_for_sync(
        lambda: cluster.kubectl("get", "serviceaccount", "default", "-n", name, check=False).returncode == 0,
        timeout=30,
        message=f"default ServiceAccount of namespace {name}",
    )
    try:
        yield name
    finally:
        cluster.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)


@pytest.fixture
def node_pool(cluster: cluster_mod.Cluster) -> Iterator[Callable[..., pools.Pool]]:
    """Makes nodes for one test: ``node_pool(count=2, kernel=..., pci=["10de"], devices={...})``.

    Each call gets a unique name prefix and pool label ``sim.sro.dev/pool: <pool>``
    (``Pool.selector``), so tests never see each other's nodes; all are deleted after the test.
    """
    made: list[pools.Pool] = []

    def make(**kwargs: Any) -> pools.Pool:
        pool = pools.make(cluster, **kwargs)
        made.append(pool)
        return pool

    try:
        yield make
    finally:
        names = [n for pool in made for n in pool.nodes]
        if names:
            cluster.delete_nodes(names)
