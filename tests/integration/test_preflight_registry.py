"""``sro preflight`` against a real registry on loopback: its exit status flips from 1 to 0
once the kernel's image is pushed, offline (SpecialResource files and recipe directories)
and live (20 nodes of the real control plane announced for a new kernel; the OS is the
nodes', the SpecialResource the cluster's). Nothing is written to the cluster and no
operator runs: preflight only reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import pools
from support import registry as registry_mod
from support.cluster import Cluster

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CRD_FILE = REPO / "manifests" / "crd" / "sro.dev_specialresources.yaml"
OLD_KERNEL = pools.RHEL94_KERNEL
NEW_KERNEL = "5.14.0-503.11.1.el9_5.x86_64"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[registry_mod.Registry]:
    started = registry_mod.start(tmp_path_factory.mktemp("preflight-registry"))
    try:
        yield started
    finally:
        started.stop()


def preflight(*args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin"}
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    return subprocess.run(
        [sys.executable, "-m", "sro", "preflight", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=REPO,
    )


def specialresource(name: str, *, image: str, selector: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"recipe": "simple-kmod", "set": {"image": image}}
    if selector is not None:
        spec["nodeSelector"] = selector
    return {
        "apiVersion": "sro.dev/v1alpha1",
        "kind": "SpecialResource",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_offline_preflight_fails_until_the_kernels_image_is_pushed(
    registry: registry_mod.Registry, tmp_path: Path
) -> None:
    repository = f"offline-{uuid.uuid4().hex[:6]}/simple-kmod"
    sr_file = tmp_path / "sr.yaml"
    sr_file.write_text(yaml.safe_dump(specialresource("kmod", image=f"{registry.host}/{repository}")))
    args = ("--kernel", NEW_KERNEL, "--os", "rhel:9.5", "--sr", str(sr_file), "-o", "json")

    before = preflight(*args)
    assert before.returncode == 1, before.stderr
    [row] = json.loads(before.stdout)["images"]
    assert row["image"] == f"{registry.host}/{repository}:{NEW_KERNEL}"
    assert (row["result"], row["state"]) == ("missing", "state-driver"), row

    digest = registry.push(repository, NEW_KERNEL)
    after = preflight(*args)
    assert after.returncode == 0, after.stdout + after.stderr
    assert json.loads(after.stdout)["images"][0]["digest"] == digest


def test_an_unreachable_registry_is_not_reported_missing(tmp_path: Path) -> None:
    sr_file = tmp_path / "sr.yaml"
    closed = f"127.0.0.1:{registry_mod.free_port()}"
    sr_file.write_text(yaml.safe_dump(specialresource("kmod", image=f"{closed}/simple-kmod")))
    result = preflight("--kernel", NEW_KERNEL, "--os", "rhel:9.5", "--sr", str(sr_file))
    assert result.returncode == 1
    assert "unreachable" in result.stdout and "missing" not in result.stdout, result.stdout


def test_live_preflight_for_twenty_nodes_announced_for_a_new_kernel(
    cluster: Cluster, node_pool: Callable[..., pools.Pool], registry: registry_mod.Registry
) -> None:
    cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=preflight-test", "-f", str(CRD_FILE)
    )
    cluster.kubectl("wait", "--for=condition=Established", "crd/specialresources.sro.dev", "--timeout=60s")
    pool = node_pool(count=20, kernel=OLD_KERNEL, os_id="rhel", os_version="9.4")
    name = f"preflight-{uuid.uuid4().hex[:8]}"
    repository = f"live-{uuid.uuid4().hex[:6]}/simple-kmod"
    cluster.create(specialresource(name, image=f"{registry.host}/{repository}", selector=pool.selector))
    try:
        before = preflight("--live", "--kernel", NEW_KERNEL, name, kubeconfig=cluster.kubeconfig)
        assert before.returncode == 1, before.stdout + before.stderr
        [_, line] = before.stdout.splitlines()
        assert line.split()[:4] == [
            name,
            "state-driver",
            f"{registry.host}/{repository}:{NEW_KERNEL}",
            "missing:",
        ]

        registry.push(repository, NEW_KERNEL)
        after = preflight("--live", "--kernel", NEW_KERNEL, name, kubeconfig=cluster.kubeconfig)
        assert after.returncode == 0, after.stdout + after.stderr
        assert " exists " in after.stdout
    finally:
        cluster.kubectl("delete", "specialresource", name, "--ignore-not-found", "--wait=false", check=False)
