"""The monitoring add-on's PromQL, checked by Prometheus's own tool.

Covers ``manifests/monitoring``: every alert rule parses and passes ``promtool check
rules``; the alerts fire, and stay quiet, as ``manifests/monitoring/tests/alerts.yaml``
says (``promtool test rules`` on synthetic series: a Degraded SpecialResource pages after
15 minutes but only from the leader's view, no leader, no replica scraped, a high error
ratio); and every query of the Grafana dashboard parses. promtool comes from Debian's
``prometheus`` package (extracted, not installed) and is cached under
``~/.cache/sro/tools``. No cluster is involved: whether the metrics exist is the
runtime's business.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
MONITORING = REPO / "manifests" / "monitoring"
CACHE = Path(os.environ.get("SRO_CACHE_DIR") or Path.home() / ".cache" / "sro") / "tools"


def _fetch_promtool(target: Path) -> None:
    """Extracts promtool from the Debian package (apt-get download needs no root; update does)."""
    with tempfile.TemporaryDirectory() as tmp:
        download = ["apt-get", "download", "-q", "prometheus"]
        proc = subprocess.run(download, cwd=tmp, capture_output=True, text=True, check=False, timeout=300)
        if proc.returncode != 0:  # package lists missing on a fresh machine
            subprocess.run(["apt-get", "update", "-qq"], check=True, timeout=300)
            subprocess.run(download, cwd=tmp, capture_output=True, text=True, check=True, timeout=300)
        (deb,) = Path(tmp).glob("prometheus_*.deb")
        subprocess.run(["dpkg-deb", "-x", str(deb), str(Path(tmp) / "x")], check=True, timeout=120)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(tmp) / "x" / "usr" / "bin" / "promtool", target.with_suffix(".tmp"))
        target.with_suffix(".tmp").rename(target)


@pytest.fixture(scope="module")
def promtool() -> Path:
    path = CACHE / "promtool"
    if not path.exists():
        _fetch_promtool(path)
    return path


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The PrometheusRule's spec as a plain Prometheus rule file."""
    rule = yaml.safe_load((MONITORING / "prometheus_rule.yaml").read_text())
    path = tmp_path_factory.mktemp("rules") / "rules.yaml"
    path.write_text(yaml.safe_dump(rule["spec"]))
    return path


def _run(promtool: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(promtool), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_every_alert_rule_passes_promtool_check_rules(promtool: Path, rules: Path) -> None:
    alerts = [r for g in yaml.safe_load(rules.read_text())["groups"] for r in g["rules"]]
    proc = _run(promtool, "check", "rules", str(rules), cwd=rules.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(alerts)} rules found" in proc.stdout


def test_the_alerts_fire_and_stay_quiet_as_their_unit_tests_say(promtool: Path, rules: Path) -> None:
    shutil.copy(MONITORING / "tests" / "alerts.yaml", rules.parent / "alerts.yaml")
    proc = _run(promtool, "test", "rules", "alerts.yaml", cwd=rules.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_every_dashboard_query_parses(promtool: Path, tmp_path: Path) -> None:
    dashboard: dict[str, Any] = json.loads((MONITORING / "dashboards" / "sro.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert len(exprs) >= 10
    # promtool parses expressions of rule files: one recording rule per query.
    records = [{"record": f"dashboard:query_{i}", "expr": e} for i, e in enumerate(exprs)]
    path = tmp_path / "dashboard.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": records}]}))
    proc = _run(promtool, "check", "rules", str(path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
