"""End-to-end fixtures: the CRD, one ``sro run`` subprocess per session, per-test nodes and cleanup.

Every test makes its own nodes (an inventory whose pools share a unique group label) and
its own SpecialResources; ``made`` deletes them after the test (waiting until the operator
has let each SpecialResource go, so no node label or object leaks into the next test).
The operator stops after the last end-to-end test, not at the end of the whole run: the
suites after it make SpecialResources of their own that no operator may touch.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import specialresources as srs
from operator_process import REPO, Operator
from support import cluster as cluster_mod
from support import waiting

CRD_DIR = REPO / "manifests" / "crd"


@pytest.fixture(scope="session")
def crd(cluster: cluster_mod.Cluster) -> None:
    """The SpecialResource CRD from manifests/crd, established."""
    crd_file = CRD_DIR / "sro.dev_specialresources.yaml"
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crd_file))
    cluster.kubectl("wait", "--for=condition=Established", "crd/specialresources.sro.dev", "--timeout=60s")


@pytest.fixture(scope="session")
def operator(
    cluster: cluster_mod.Cluster, crd: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Operator]:
    """``sro run`` against the cluster, with a drop-in recipe directory tests write into."""
    base = tmp_path_factory.mktemp("operator")
    recipes = base / "recipes"
    recipes.mkdir()
    op = Operator(kubeconfig=cluster.kubeconfig, recipes_dir=recipes, log_dir=base)
    op.start()
    _STARTED.append(op)
    try:
        yield op
    finally:
        op.stop()


_STARTED: list[Operator] = []
HERE = Path(__file__).resolve().parent


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After the last end-to-end test of a run, stop the session's operator (its fixture
    would keep it running through the integration tests, whose SpecialResources it would
    then reconcile: finalizers, status, Events). After the test's own teardown, since
    ``made`` waits for the operator to let its SpecialResources go."""
    yield
    if nextitem is None or HERE not in Path(str(nextitem.path)).resolve().parents:
        for op in _STARTED:
            op.stop()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@dataclass
class Made:
    """What one test made, removed after it: SpecialResources first, then nodes."""

    cluster: cluster_mod.Cluster
    srs: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)

    def group(self, prefix: str, pools: Sequence[Mapping[str, Any]]) -> tuple[str, list[str]]:
        """Nodes of several pools sharing one unique group label; (group, node names)."""
        group = unique(prefix)
        names = self.cluster.add_nodes(srs.pool_inventory(group, pools))
        self.nodes.extend(names)
        return group, names

    def sr(self, body: Mapping[str, Any]) -> str:
        name = str(body["metadata"]["name"])
        self.srs.append(name)
        srs.create(self.cluster, body)
        return name

    def cleanup(self) -> None:
        for name in self.srs:
            srs.delete(self.cluster, name)
        for name in self.srs:
            try:
                waiting.wait_for_sync(
                    lambda name=name: srs.get(self.cluster, name) is None,
                    timeout=120,
                    interval=0.5,
                    message=f"SpecialResource {name} deleted",
                )
            except AssertionError:  # the operator never let it go: force it
                patch = json.dumps({"metadata": {"finalizers": None}})
                self.cluster.kubectl("patch", "sr", name, "--type=merge", "-p", patch, check=False)
        self.cluster.delete_nodes(self.nodes)


@pytest.fixture
def made(cluster: cluster_mod.Cluster, operator: Operator) -> Iterator[Made]:
    handle = Made(cluster=cluster)
    try:
        yield handle
    finally:
        handle.cleanup()


@pytest.fixture
def recipe_dir(operator: Operator) -> Callable[[str, Mapping[str, str]], Path]:
    """Writes a drop-in recipe (relative path -> text) into the operator's recipe directory."""
    written: list[Path] = []

    def write(name: str, files: Mapping[str, str]) -> Path:
        root = operator.recipes_dir / name
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        written.append(root)
        return root

    return write


__all__ = ["Made", "unique", "waiting"]
