"""The Helm chart's output on the real API server: a strict server-side dry run of every object.

``helm template`` (CRDs included) for the default values and for the full values file
(every value set; ServiceMonitor and PrometheusRule validated against the minimal Prometheus
operator CRDs that manifests_install.py installs), applied with ``kubectl apply
--dry-run=server --validate=strict`` in a fresh namespace: every object is admitted, no
field is unknown, nothing warns. That the chart's objects equal the kustomize tree's is
test_chart_render.py (unit); that the operator converges from an installed chart is the
in-cluster end-to-end test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from manifests_install import monitoring_crds  # noqa: F401  (a fixture)
from support import chart
from support.cluster import Cluster

pytestmark = pytest.mark.integration


def _dry_run(cluster: Cluster, *, namespace: str, values: list[Path]) -> None:
    objects = chart.template(namespace=namespace, values=values, include_crds=True)
    proc = cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--dry-run=server",
        "--validate=strict",
        "-f",
        "-",
        input=yaml.safe_dump_all(objects),
    )
    assert proc.stderr.strip() == "", proc.stderr  # no warnings either
    assert len(proc.stdout.splitlines()) == len(objects), proc.stdout


def test_the_chart_with_default_values_passes_a_strict_server_side_dry_run(
    cluster: Cluster, namespace: str
) -> None:
    _dry_run(cluster, namespace=namespace, values=[])


@pytest.mark.usefixtures("monitoring_crds")
def test_the_chart_with_every_value_set_passes_a_strict_server_side_dry_run(
    cluster: Cluster, namespace: str
) -> None:
    _dry_run(cluster, namespace=namespace, values=[chart.FULL_VALUES])
