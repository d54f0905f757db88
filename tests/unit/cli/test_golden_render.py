"""``sro render`` of the example recipes on a fixed inventory, compared with golden files.

tests/golden/<recipe>.golden.yaml holds the exact output for tests/golden/inventory.yaml
and tests/golden/<recipe>.sr.yaml. After an intended change, regenerate them with
``SRO_UPDATE_GOLDEN=1 pytest tests/unit/cli/test_golden_render.py`` and review the diff;
without that variable the test only compares.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from sro import cli

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
GOLDEN = REPO / "tests" / "golden"
UPDATE = os.environ.get("SRO_UPDATE_GOLDEN") == "1"


def render(recipe: str, capsys: pytest.CaptureFixture[str]) -> str:
    code = cli.main(
        [
            "render",
            "--recipe",
            f"assets/{recipe}",
            "--sr",
            f"tests/golden/{recipe}.sr.yaml",
            "--nodes",
            "tests/golden/inventory.yaml",
            "--cluster-version",
            "1.36",
            "--http-proxy",
            "http://proxy.example.com:3128",
            "--no-proxy",
            ".cluster.local",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    return out


@pytest.mark.parametrize("recipe", ["nvidia-gpu", "simple-kmod"])
def test_render_output_matches_the_golden_file(
    recipe: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    got = render(recipe, capsys)
    golden = GOLDEN / f"{recipe}.golden.yaml"
    if UPDATE:
        golden.write_text(got)
    assert got == golden.read_text(), (
        f"sro render output changed; see the module docstring to regenerate {golden}"
    )


def test_the_rendered_output_parses_as_the_objects_it_announces(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    docs = [d for d in yaml.safe_load_all(render("nvidia-gpu", capsys)) if d]
    kinds = [d["kind"] for d in docs]
    # a driver per kernel group, toolkit, plugin, exporter, GFD
    assert kinds.count("DaemonSet") == 3 + 1 + 1 + 1 + 1
    assert kinds.count("Pod") == 3 * 4  # three per-node validations on the four GPU nodes
    assert all(d["metadata"]["labels"]["sro.dev/owner"] == "nvidia-gpu" for d in docs)


@pytest.mark.parametrize("recipe", ["nvidia-gpu", "simple-kmod"])
def test_build_jobs_are_printed_only_when_asked_one_per_kernel_group(
    recipe: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    assert "kind: Job" not in render(recipe, capsys)
    argv = ["render", "--recipe", f"assets/{recipe}", "--sr", f"tests/golden/{recipe}.sr.yaml", "--nodes",
            "tests/golden/inventory.yaml", "--builds", "--state", "state-driver-build"]  # fmt: skip
    assert cli.main(argv) == 0
    jobs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    groups = {"nvidia-gpu": 3, "simple-kmod": 3}[recipe]  # the kernel groups of the selected nodes
    assert [d["kind"] for d in jobs] == ["Job"] * groups
    for job in jobs:
        produced = job["metadata"]["annotations"]["sro.dev/builds"]
        kernel = job["spec"]["template"]["spec"]["nodeSelector"][
            "feature.node.kubernetes.io/kernel-version.full"
        ]
        assert produced.endswith(kernel) or recipe == "nvidia-gpu", (produced, kernel)
        env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["IMAGE"] == produced and env["KERNEL_VERSION"] == kernel
