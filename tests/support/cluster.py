"""A handle on one running local cluster (``hack/cluster``), for tests.

Everything goes through the real tools: ``hack/cluster`` for what only the simulator
can do (nodes, kernels, missing images, restarts, compaction) and the kubectl built
for the cluster's version for everything else.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
HACK_CLUSTER = REPO / "hack" / "cluster"


def default_dir() -> Path:
    return Path(os.environ.get("SRO_CLUSTER_DIR") or REPO / ".run" / "cluster").resolve()


class CommandError(AssertionError):
    """A command of the harness failed; carries its output for the test report."""


class Cluster:
    """One cluster, identified by its run directory (what ``SRO_CLUSTER_DIR`` names)."""

    def __init__(self, dir: Path | str | None = None) -> None:
        self.dir = Path(dir).resolve() if dir else default_dir()
        self.kubeconfig = self.dir / "kubeconfig"

    @property
    def audit_log(self) -> Path:
        """kube-apiserver's audit log of every write (read it with ``simcluster.audit.read``)."""
        return self.dir / "logs" / "audit.log"

    def __repr__(self) -> str:
        return f"Cluster({str(self.dir)!r})"

    # --- hack/cluster ------------------------------------------------------
    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["SRO_CLUSTER_DIR"] = str(self.dir)
        env["KUBECONFIG"] = str(self.kubeconfig)
        return env

    def run(self, *args: str, timeout: float = 900) -> str:
        """Runs ``hack/cluster ARGS`` for this cluster; returns stdout, raises CommandError on failure."""
        proc = subprocess.run(
            [str(HACK_CLUSTER), *args],
            env=self._env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0:
            raise CommandError(
                f"hack/cluster {' '.join(args)} exited {proc.returncode}\n"
                f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
            )
        return proc.stdout

    def is_running(self) -> bool:
        proc = subprocess.run(
            [str(HACK_CLUSTER), "env"],
            env=self._env(),
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        return proc.returncode == 0

    # --- kubectl -----------------------------------------------------------
    @property
    def kubectl_path(self) -> Path:
        """The kubectl matching the cluster's version (linked into the run directory by ``up``)."""
        return self.dir / "bin" / "kubectl"

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(self.kubectl_path), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise CommandError(f"kubectl {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
        return proc

    def kubectl_json(self, *args: str) -> dict[str, Any]:
        """``kubectl ARGS -o json``, decoded."""
        result: dict[str, Any] = json.loads(self.kubectl(*args, "-o", "json").stdout)
        return result

    def apply(
        self, manifest: str | dict[str, Any] | list[dict[str, Any]], *, namespace: str | None = None
    ) -> None:
        """``kubectl apply`` of YAML text or objects."""
        if isinstance(manifest, dict):
            manifest = yaml.safe_dump(manifest)
        elif isinstance(manifest, list):
            manifest = yaml.safe_dump_all(manifest)
        args = ["apply", "-f", "-"] + (["-n", namespace] if namespace else [])
        self.kubectl(*args, input=manifest)

    def create(self, manifest: str | dict[str, Any], *, namespace: str | None = None) -> None:
        """``kubectl create`` (keeps ``status``, which apply would drop for some kinds)."""
        if isinstance(manifest, dict):
            manifest = yaml.safe_dump(manifest)
        args = ["create", "-f", "-"] + (["-n", namespace] if namespace else [])
        self.kubectl(*args, input=manifest)

    # --- simulated nodes and hardware --------------------------------------
    def add_nodes(self, inventory: dict[str, Any] | str) -> list[str]:
        """Adds the inventory's nodes (a dict or YAML text in hack/inventory's format); waits until Ready."""
        text = inventory if isinstance(inventory, str) else yaml.safe_dump(inventory)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="inventory-") as f:
            f.write(text)
            f.flush()
            out = self.run("nodes", "--inventory", f.name)
        return [line for line in out.splitlines() if line.strip()]

    def delete_nodes(self, names: Iterable[str]) -> None:
        names = list(names)
        if names:
            self.run("nodes", "--delete", *names)

    def set_kernel(self, nodes: Iterable[str], version: str, *, os: str | None = None) -> None:
        """What NFD publishes after the nodes reboot into ``version`` (and OS ``ID:VERSION_ID``)."""
        self.run("kernel", *nodes, "--to", version, *(["--os", os] if os else []))

    def add_missing_image(self, *patterns: str) -> None:
        """Glob patterns of images the simulated registry lacks: matching pods stay ImagePullBackOff."""
        self.run("missing-image", "add", *patterns)

    def remove_missing_image(self, *patterns: str) -> None:
        self.run("missing-image", "remove", *patterns)

    def restart(self, component: str) -> None:
        self.run("restart", component)

    def compact(self) -> int:
        """Compacts etcd (and empties the apiserver's watch cache); returns the revision."""
        return int(self.run("compact").split()[-1])

    def server(self) -> str:
        config = yaml.safe_load(self.kubeconfig.read_text())
        return str(config["clusters"][0]["cluster"]["server"])
