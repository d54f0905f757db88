"""The kwok configuration ``hack/cluster up`` writes (hack/lib/simcluster/kwok_config.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from simcluster import kwok_config, layout

pytestmark = pytest.mark.unit

KWOK_DEFAULT = 4  # kwok v0.8.0's podPlayStageParallelism, nodePlayStageParallelism, nodeLeaseParallelism


def test_kwok_moves_many_pods_nodes_and_leases_at_once_and_serves_logs(tmp_path: Path) -> None:
    docs = list(yaml.safe_load_all(kwok_config.write(layout.RunDir(tmp_path)).read_text()))
    configurations = [d for d in docs if d["kind"] == "KwokConfiguration"]
    assert len(configurations) == 1
    assert configurations[0]["apiVersion"] == "config.kwok.x-k8s.io/v1alpha1"
    options = configurations[0]["options"]
    parallelism = ("podPlayStageParallelism", "nodePlayStageParallelism", "nodeLeaseParallelism")
    assert all(isinstance(options[k], int) and options[k] > KWOK_DEFAULT for k in parallelism)
    # kwok defaults nothing in a configuration it is given: its node server serves logs
    # only with this (sro's wait-for-logs reads them through the API server).
    assert options["enableDebuggingHandlers"] is True
    # The Stages and the default logs are still all there.
    stages = {d["metadata"]["name"] for d in docs if d["kind"] == "Stage"}
    shipped = {
        d["metadata"]["name"]
        for p in layout.KWOK_STAGES.glob("*.yaml")
        for d in yaml.safe_load_all(p.read_text())
        if d
    }
    assert stages == shipped and shipped
    assert [d["kind"] for d in docs].count("ClusterLogs") == 1
