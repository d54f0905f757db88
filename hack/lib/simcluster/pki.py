"""Certificates and kubeconfigs for a loopback control plane.

Generated with ``cryptography`` (ECDSA P-256: fast to make, accepted everywhere in
Kubernetes) so ``up`` needs no openssl and no network. Each component gets its own
client identity, as in a real cluster, so RBAC and audit read naturally.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

# Client identities: file stem -> (CN, O). The admin is a cluster-admin through system:masters.
CLIENTS: dict[str, tuple[str, str | None]] = {
    "admin": ("sro-admin", "system:masters"),
    "controller-manager": ("system:kube-controller-manager", None),
    "scheduler": ("system:kube-scheduler", None),
    # kwok writes the status of every node and pod, as all kubelets together would.
    "kwok": ("kwok", "system:masters"),
    # devsim reports node status and devices and deletes pods as kubelets would; its own
    # name keeps its writes apart from the harness's in the audit log.
    "devsim": ("sro-devsim", "system:masters"),
}
SERVICE_IP = "10.0.0.1"


@dataclasses.dataclass(frozen=True)
class Pki:
    """Paths of the generated material inside one run directory."""

    dir: Path

    @property
    def ca_cert(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.dir / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.dir / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.dir / "apiserver.key"

    @property
    def sa_key(self) -> Path:
        return self.dir / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.dir / "sa.pub"

    def client_cert(self, who: str) -> Path:
        return self.dir / f"{who}.crt"

    def client_key(self, who: str) -> Path:
        return self.dir / f"{who}.key"


def write_kubeconfig(path: Path, *, pki: Pki, who: str, server: str) -> None:
    """A kubeconfig that reaches ``server`` as the given client identity (file paths, not inline data)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "sro-local", "cluster": {"server": server, "certificate-authority": str(pki.ca_cert)}}
        ],
        "users": [
            {
                "name": who,
                "user": {
                    "client-certificate": str(pki.client_cert(who)),
                    "client-key": str(pki.client_key(who)),
                },
            }
        ],
        "contexts": [{"name": "sro-local", "context": {"cluster": "sro-local", "user": who}}],
        "current-context": "sro-local",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
