"""``sro status`` and ``sro diff`` against a SpecialResource the real operator converges.

One simple-kmod SpecialResource on two nodes: once it is Ready, ``sro diff`` by name finds
nothing to change (exit 0), and the same SpecialResource with another image in a file
shows the per-kernel DaemonSet changing (exit 1, a unified diff). Then a broken node
joins: ``sro status`` (JSON and text) shows each node state by state, the broken node
failed at the validation with its reason, and the summary. Rows and text alone are unit
tests (tests/unit/report); the 1,000-node timing is ``hack/bench status``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import specialresources as srs
import yaml
from conftest import Made, unique
from operator_process import SRO

pytestmark = pytest.mark.e2e

RHEL = {"kernel": "5.14.0-427.13.1.el9_4.x86_64", "os": {"id": "rhel", "versionId": "9.4"}}
DRIVER, VALIDATION = "state-driver", "state-driver-validation"


def _sro(made: Made, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(made.cluster.kubeconfig)}
    return subprocess.run(
        [str(SRO), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


async def test_status_shows_every_node_by_state_and_diff_shows_what_run_would_change(
    made: Made, tmp_path: Path
) -> None:
    group, good = made.group("st", [{"count": 2, **RHEL}])
    body = srs.manifest(unique("st"), recipe="simple-kmod", node_selector={srs.GROUP_LABEL: group})
    name = made.sr(body)
    await srs.wait_ready(made.cluster, name, within=180)

    same = _sro(made, "diff", "--sr", name)
    assert (same.returncode, same.stdout, same.stderr) == (0, "", "")

    edited = tmp_path / "sr.yaml"
    edited.write_text(
        yaml.safe_dump({**body, "spec": {**body["spec"], "set": {"image": "registry.example/kmod"}}})
    )
    changed = _sro(made, "diff", "--sr", str(edited))
    assert changed.returncode == 1, changed.stderr
    assert "--- live/apps/v1/DaemonSet/" in changed.stdout
    lines = changed.stdout.splitlines()
    assert any(line.startswith("+") and "registry.example/kmod:" in line for line in lines)
    assert any(line.startswith("-") and "quay.io/openshift-psap/simple-kmod:" in line for line in lines)

    broken = made.cluster.add_nodes(
        srs.pool_inventory(group, [{"count": 1, "broken": True, "prefix": f"{group}-b", **RHEL}])
    )
    made.nodes.extend(broken)
    await srs.wait_degraded(made.cluster, name, "StateFailed", within=180)

    shown = _sro(made, "status", name, "-o", "json")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["name"] == name and report["phase"] == "Degraded"
    assert report["states"] == [DRIVER, VALIDATION]
    rows = {row["name"]: row for row in report["nodes"]}
    assert sorted(rows) == sorted([*good, *broken])
    for node in good:
        assert rows[node]["states"] == {DRIVER: "ready", VALIDATION: "ready"}, rows[node]
        assert rows[node]["complete"] is True and rows[node]["kernel"] == RHEL["kernel"]
    failed = rows[broken[0]]
    assert failed["states"] == {DRIVER: "ready", VALIDATION: "failed"}, failed
    assert failed["reason"].startswith(f"{VALIDATION}: "), failed

    text = _sro(made, "status", name)
    lines = text.stdout.splitlines()
    assert lines[0].split()[:5] == ["NODE", "KERNEL", "DRIVER", "DRIVER-VALIDATION", "COMPLETE"]
    assert len(lines) == 1 + 3 + 1
    assert (
        lines[-1].startswith(f"{name}: Degraded: StateFailed")
        and "(2/3 complete, 1 failing, 1 kernel group)" in lines[-1]
    )
