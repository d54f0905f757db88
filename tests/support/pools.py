"""Per-test pools of simulated nodes with unique names and a unique pool label."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from support import cluster as cluster_mod

POOL_LABEL = "sim.sro.dev/pool"
RHEL94_KERNEL = "5.14.0-427.13.1.el9_4.x86_64"


@dataclasses.dataclass(frozen=True)
class Pool:
    """Nodes created together: their names and the label that selects exactly them."""

    name: str
    nodes: tuple[str, ...]

    @property
    def selector(self) -> dict[str, str]:
        """A nodeSelector matching exactly this pool's nodes."""
        return {POOL_LABEL: self.name}

    @property
    def label_selector(self) -> str:
        """The same as a ``-l`` label selector string."""
        return f"{POOL_LABEL}={self.name}"


def make(
    cluster: cluster_mod.Cluster,
    *,
    count: int = 1,
    kernel: str = RHEL94_KERNEL,
    os_id: str = "rhel",
    os_version: str = "9.4",
    pci: Sequence[str] = ("10de",),
    devices: Mapping[str, int] | None = None,
    broken: bool = False,
    taints: Sequence[Mapping[str, str]] = (),
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    prefix: str = "p",
) -> Pool:
    """Creates ``count`` Ready nodes named ``<prefix>-<random>-<i>`` in a pool of their own."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    pool: dict[str, Any] = {
        "name": name,
        "count": count,
        "prefix": name,
        "kernel": kernel,
        "os": {"id": os_id, "versionId": os_version},
        "pci": list(pci),
        "broken": broken,
    }
    if devices:
        pool["devices"] = dict(devices)
    if taints:
        pool["taints"] = [dict(t) for t in taints]
    if labels:
        pool["labels"] = dict(labels)
    if annotations:
        pool["annotations"] = dict(annotations)
    nodes = cluster.add_nodes({"pools": [pool]})
    return Pool(name=name, nodes=tuple(nodes))
