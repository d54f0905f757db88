"""Where things live: pinned versions, cached binaries and one cluster's run directory.

Kept in one place so the CLI, the simulator helper and the test harness agree on
paths without passing them around.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
HACK = REPO / "hack"
KWOK_STAGES = HACK / "kwok" / "stages"
KWOK_CRDS = HACK / "kwok" / "crds"


def versions() -> dict[str, str]:
    """The pinned component versions from hack/lib/versions.env."""
    out: dict[str, str] = {}
    for raw in (HACK / "lib" / "versions.env").read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def bin_dir() -> Path:
    """The directory hack/build fills: $SRO_CACHE_DIR/bin or ~/.cache/sro/bin."""
    base = os.environ.get("SRO_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sro"
    )
    return Path(base).resolve() / "bin"


def binary(component: str) -> Path:
    """The cached binary of a component at its pinned version."""
    v = versions()
    version = {
        "etcd": v["ETCD_VERSION"],
        "kwok": v["KWOK_VERSION"],
    }.get(component, v["KUBERNETES_VERSION"])
    return bin_dir() / f"{component}-{version}"


def default_run_dir() -> Path:
    return Path(os.environ.get("SRO_CLUSTER_DIR") or REPO / ".run" / "cluster").resolve()


@dataclasses.dataclass(frozen=True)
class RunDir:
    """Everything one running cluster keeps on disk, all under one directory."""

    root: Path

    @property
    def state(self) -> Path:
        return self.root / "state.json"

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def pids(self) -> Path:
        return self.root / "pids"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def audit_log(self) -> Path:
        """kube-apiserver's audit log of writes (simcluster.audit reads it)."""
        return self.logs / "audit.log"

    @property
    def audit_policy(self) -> Path:
        return self.root / "audit-policy.yaml"

    @property
    def admission_config(self) -> Path:
        """kube-apiserver's AdmissionConfiguration (``up --pod-security``)."""
        return self.root / "admission.yaml"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd"

    @property
    def kwok(self) -> Path:
        return self.root / "kwok"

    @property
    def pod_logs(self) -> Path:
        return self.root / "pod-logs"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def kubeconfig_for(self, user: str) -> Path:
        return self.root / f"kubeconfig-{user}"
