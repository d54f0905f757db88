"""Fixtures for tests that need the real local cluster: ``cluster``, ``namespace``, ``node_pool``.

Unit and property tests never touch them, so ``pytest -m unit`` builds and starts
nothing. The first test that asks for ``cluster`` reuses the cluster running in
``SRO_CLUSTER_DIR`` (default ``.run/cluster``) if there is one - fast local loops with
``hack/cluster up`` once - or brings one up there and takes it down when the last test
session using it ends.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from hypothesis import settings

# No per-example deadline: on a loaded 2-core machine (the suite runs beside a whole
# control plane) a plain example can take longer than hypothesis's 200 ms, which says
# nothing about the code. Each test's example count bounds its time instead.
settings.register_profile("sro", deadline=None)
settings.load_profile("sro")

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # so ``tests.support`` resolves as well as ``support``
    sys.path.append(str(REPO))

from simcluster import stopping  # noqa: E402
from support import cluster as cluster_mod  # noqa: E402
from support import pools, waiting  # noqa: E402


def pytest_configure() -> None:
    stopping.install()  # a run stopped by SIGTERM or SIGHUP still tears its cluster down


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


# -- fast tests stay fast and clean up after themselves ------------------------------------

FAST_TIMEOUT = {"unit": 5.0, "property": 30.0}
"""Seconds a unit test (pure logic) or a property test (many generated cases) may take; the
600 s of pyproject.toml are for tests that drive the real control plane."""


def _fast_kind(item: pytest.Item) -> str | None:
    parts = Path(str(item.path)).relative_to(REPO).parts
    return parts[1] if len(parts) > 1 and parts[0] == "tests" and parts[1] in FAST_TIMEOUT else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        kind = _fast_kind(item)
        if kind is not None and item.get_closest_marker("timeout") is None:
            # The function only: the session's last test also tears down session fixtures
            # (the cluster, when the session started one), which takes longer than 5 s.
            item.add_marker(pytest.mark.timeout(FAST_TIMEOUT[kind], func_only=True))


@pytest_asyncio.fixture(autouse=True, loop_scope="session")
async def _no_tasks_left_behind(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """A unit or property test that leaves asyncio tasks running fails: they would go on
    acting in later tests (the loop is shared) and hide the bug that leaked them."""
    if _fast_kind(request.node) is None:
        yield
        return
    before = asyncio.all_tasks()
    yield
    await asyncio.sleep(0)  # let tasks cancelled at the test's end finish
    left = [t for t in asyncio.all_tasks() - before if not t.done() and t is not asyncio.current_task()]
    for task in left:
        task.cancel()
    if left:
        pytest.fail(
            f"the test left {len(left)} asyncio task(s) running: {sorted(t.get_name() for t in left)}"
        )
