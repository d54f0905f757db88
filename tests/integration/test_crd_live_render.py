"""``sro render --live`` against the real cluster: its nodes, version and served kinds.

Adds a small pool of simulated nodes with two kernels (unique labels, so other tests'
nodes never interfere), renders the simple-kmod recipe for a SpecialResource selecting
that pool, and checks the output against the nodes the API server reports: one driver
DaemonSet per kernel group and one validation Pod per node. Nothing is written.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sro import cli

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def pool(cluster: Any) -> Iterator[str]:
    """A fresh pool of three nodes on two kernels; yields the pool's label value."""
    name = f"render-{uuid.uuid4().hex[:6]}"
    names = cluster.add_nodes(
        {
            "pools": [
                {
                    "name": name,
                    "prefix": f"{name}-a",
                    "count": 2,
                    "kernel": "5.14.0-427.13.1.el9_4.x86_64",
                    "os": {"id": "rhel", "versionId": "9.4"},
                },
                {
                    "name": name,
                    "prefix": f"{name}-b",
                    "count": 1,
                    "kernel": "5.15.0-105-generic",
                    "os": {"id": "ubuntu", "versionId": "22.04"},
                },
            ]
        }
    )
    try:
        yield name
    finally:
        cluster.delete_nodes(names)


def test_render_live_uses_the_clusters_nodes_and_kinds(
    cluster: Any,
    pool: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    sr = tmp_path / "sr.yaml"
    sr.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "sro.dev/v1alpha1",
                "kind": "SpecialResource",
                "metadata": {"name": "live-render"},
                "spec": {"recipe": "simple-kmod", "nodeSelector": {"sim.sro.dev/pool": pool}},
            }
        )
    )
    code = cli.main(["render", "--recipe", str(REPO / "assets" / "simple-kmod"), "--sr", str(sr), "--live"])
    out = capsys.readouterr().out
    assert code == 0
    docs = [d for d in yaml.safe_load_all(out) if d]

    listed = cluster.kubectl_json("get", "nodes", "-l", f"sim.sro.dev/pool={pool}")["items"]
    kernels = {n["status"]["nodeInfo"]["kernelVersion"] for n in listed}
    node_names = sorted(n["metadata"]["name"] for n in listed)
    assert len(node_names) == 3 and len(kernels) == 2

    daemonsets = [d for d in docs if d["kind"] == "DaemonSet"]
    selected = sorted(
        d["spec"]["template"]["spec"]["nodeSelector"]["feature.node.kubernetes.io/kernel-version.full"]
        for d in daemonsets
    )
    assert selected == sorted(kernels)
    pods = sorted(d["spec"]["nodeName"] for d in docs if d["kind"] == "Pod")
    assert pods == node_names
    assert f"{len(node_names)} selected node(s); 2 kernel group(s)" in out
