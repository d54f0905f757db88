"""Node inventories: the YAML format, a realistic generated mix, and Node objects.

A node here is what Node Feature Discovery and a kubelet would have published for a
machine: NFD's kernel, OS and PCI labels plus a matching ``status.nodeInfo``. The
devices a machine carries are *not* in its capacity at creation; they are recorded
in the ``sim.sro.dev/devices`` annotation and appear only while a device-plugin pod
runs there (see ``devsim``). The format is documented in hack/inventory/example.yaml.
"""

from __future__ import annotations

import dataclasses
import json
import random
import uuid
from collections.abc import Mapping
from typing import Any

import yaml

NFD = "feature.node.kubernetes.io"
SIM = "sim.sro.dev"
DEVICES_ANNOTATION = f"{SIM}/devices"
POOL_LABEL = f"{SIM}/pool"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KUBELET_VERSION = "v1.36.3"
DEFAULT_CAPACITY = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "500Gi"}

# Kernels by OS release, newest errata last, as a real fleet would show them.
KERNELS: dict[tuple[str, str], list[str]] = {
    ("rhel", "9.4"): [
        "5.14.0-427.13.1.el9_4.x86_64",
        "5.14.0-427.42.1.el9_4.x86_64",
        "5.14.0-427.50.1.el9_4.x86_64",
    ],
    ("ubuntu", "22.04"): ["5.15.0-105-generic", "5.15.0-119-generic", "6.8.0-45-generic"],
    ("rhel", "9.2"): [
        "5.14.0-284.11.1.el9_2.x86_64",
        "5.14.0-284.30.1.el9_2.x86_64",
        "5.14.0-284.52.1.el9_2.x86_64",
    ],
}

# Accelerator profiles for generated nodes: (weight, PCI vendors, devices carried).
PROFILES: list[tuple[int, list[str], dict[str, int]]] = [
    (45, ["10de"], {"nvidia.com/gpu": 8}),
    (15, ["10de", "15b3"], {"nvidia.com/gpu": 8, "rdma/hca": 1}),
    (10, ["15b3"], {"rdma/hca": 1}),
    (15, ["8086"], {"gpu.intel.com/i915": 2}),
    (15, ["1002"], {"amd.com/gpu": 8}),
]


class InventoryError(ValueError):
    """An inventory that does not follow the documented format."""


@dataclasses.dataclass(frozen=True)
class NodeSpec:
    """One simulated machine."""

    name: str
    pool: str
    kernel: str
    os_id: str
    os_version: str
    os_image: str = ""
    arch: str = "amd64"
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    annotations: Mapping[str, str] = dataclasses.field(default_factory=dict)
    devices: Mapping[str, int] = dataclasses.field(default_factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()
    capacity: Mapping[str, str] = dataclasses.field(default_factory=lambda: dict(DEFAULT_CAPACITY))


def os_image(os_id: str, version: str) -> str:
    """The PRETTY_NAME a kubelet reports for an OS release."""
    if os_id == "rhel":
        return f"Red Hat Enterprise Linux {version} (Plow)"
    if os_id == "ubuntu":
        return f"Ubuntu {version} LTS"
    return f"{os_id} {version}"


def kernel_labels(kernel: str) -> dict[str, str]:
    """NFD's kernel labels: the full string and its numeric parts."""
    labels = {f"{NFD}/kernel-version.full": kernel}
    numbers = kernel.split("-", 1)[0].split(".")
    for key, value in zip(("major", "minor", "revision"), numbers, strict=False):
        labels[f"{NFD}/kernel-version.{key}"] = value
    return labels


def os_labels(os_id: str, version: str) -> dict[str, str]:
    """NFD's os_release labels: ID, VERSION_ID and its dot-separated parts."""
    labels = {f"{NFD}/system-os_release.ID": os_id, f"{NFD}/system-os_release.VERSION_ID": version}
    parts = version.split(".")
    labels[f"{NFD}/system-os_release.VERSION_ID.major"] = parts[0]
    if len(parts) > 1:
        labels[f"{NFD}/system-os_release.VERSION_ID.minor"] = parts[1]
    return labels


def _str_map(value: Any, *, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InventoryError(f"{where}: expected a mapping, got {type(value).__name__}")
    return {str(k): str(v) for k, v in value.items()}


def parse(data: Any) -> list[NodeSpec]:
    """Node specs from an inventory document (already loaded from YAML)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("pools"), list):
        raise InventoryError("an inventory is a mapping with a 'pools' list")
    known = {
        "name",
        "count",
        "names",
        "prefix",
        "kernel",
        "os",
        "osImage",
        "arch",
        "pci",
        "labels",
        "annotations",
        "devices",
        "taints",
        "capacity",
        "broken",
    }
    specs: list[NodeSpec] = []
    for i, pool in enumerate(data["pools"]):
        where = f"pools[{i}]"
        if not isinstance(pool, Mapping):
            raise InventoryError(f"{where}: expected a mapping")
        unknown = set(pool) - known
        if unknown:
            raise InventoryError(f"{where}: unknown keys {sorted(unknown)}")
        name = str(pool.get("name") or pool.get("prefix") or f"pool{i}")
        if "kernel" not in pool or "os" not in pool:
            raise InventoryError(f"{where}: 'kernel' and 'os' are required")
        os_ = pool["os"]
        if not isinstance(os_, Mapping) or "id" not in os_ or "versionId" not in os_:
            raise InventoryError(f"{where}.os: expected {{id: ..., versionId: ...}}")
        os_id, version = str(os_["id"]), str(os_["versionId"])
        if "names" in pool:
            names = [str(n) for n in pool["names"]]
        else:
            count = int(pool.get("count", 1))
            prefix = str(pool.get("prefix") or name)
            names = [f"{prefix}-{n}" for n in range(count)]
        labels = _str_map(pool.get("labels"), where=f"{where}.labels")
        for vendor in pool.get("pci") or []:
            labels[f"{NFD}/pci-{vendor}.present"] = "true"
        annotations = _str_map(pool.get("annotations"), where=f"{where}.annotations")
        if pool.get("broken"):
            annotations[f"{SIM}/broken"] = "true"
        devices = {str(k): int(v) for k, v in (pool.get("devices") or {}).items()}
        capacity = dict(DEFAULT_CAPACITY) | _str_map(pool.get("capacity"), where=f"{where}.capacity")
        taints = tuple(_str_map(t, where=f"{where}.taints") for t in pool.get("taints") or [])
        for node_name in names:
            specs.append(
                NodeSpec(
                    name=node_name,
                    pool=name,
                    kernel=str(pool["kernel"]),
                    os_id=os_id,
                    os_version=version,
                    os_image=str(pool.get("osImage") or os_image(os_id, version)),
                    arch=str(pool.get("arch", "amd64")),
                    labels=labels,
                    annotations=annotations,
                    devices=devices,
                    taints=taints,
                    capacity=capacity,
                )
            )
    return specs


def load(text: str) -> list[NodeSpec]:
    return parse(yaml.safe_load(text))


def kernel_catalog(count: int) -> list[tuple[str, str, str]]:
    """``count`` distinct (kernel, os id, os version) triples spread over the OS releases."""
    releases = list(KERNELS.items())
    out: list[tuple[str, str, str]] = []
    round_ = 0
    while len(out) < count:
        for (os_id, version), kernels in releases:
            if len(out) == count:
                break
            if round_ < len(kernels):
                kernel = kernels[round_]
            elif os_id == "ubuntu":  # later errata of the same series
                kernel = f"5.15.0-{120 + round_}-generic"
            else:
                stream = "427" if version == "9.4" else "284"
                kernel = f"5.14.0-{stream}.{60 + round_}.1.el9_{version.split('.')[1]}.x86_64"
            out.append((kernel, os_id, version))
        round_ += 1
    return out


def generate(
    *, nodes: int, kernels: int, prefix: str = "node", pool: str | None = None, seed: int = 0
) -> dict[str, Any]:
    """An inventory of ``nodes`` machines with ``kernels`` kernels, as a document ``parse`` reads.

    About one machine in five carries no accelerator; the rest carry NVIDIA, Mellanox,
    Intel or AMD devices. The same arguments always give the same inventory.
    """
    rng = random.Random(seed)
    catalog = kernel_catalog(max(1, kernels))
    weights = [w for w, _, _ in PROFILES]
    pools: dict[tuple[Any, ...], dict[str, Any]] = {}
    width = max(3, len(str(nodes - 1)))
    for i in range(nodes):
        kernel, os_id, version = catalog[i % len(catalog)]
        if i % 5 == 4:
            vendors: list[str] = []
            devices: dict[str, int] = {}
        else:
            _, vendors, devices = rng.choices(PROFILES, weights=weights)[0]
        key = (kernel, tuple(vendors))
        entry = pools.get(key)
        if entry is None:
            kind = "-".join(vendors) or "cpu"
            entry = pools[key] = {
                "name": pool or f"{prefix}-{os_id}{version.replace('.', '')}-{kind}",
                "names": [],
                "kernel": kernel,
                "os": {"id": os_id, "versionId": version},
                "pci": list(vendors),
            }
            if devices:
                entry["devices"] = dict(devices)
        entry["names"].append(f"{prefix}-{i:0{width}d}")
    return {"pools": list(pools.values())}


def node_object(spec: NodeSpec) -> dict[str, Any]:
    """The Node to create: NFD labels, kwok's annotation, a kubelet-like nodeInfo, no devices yet."""
    labels = {
        "kubernetes.io/hostname": spec.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": spec.arch,
        "type": "kwok",
        POOL_LABEL: spec.pool,
        **kernel_labels(spec.kernel),
        **os_labels(spec.os_id, spec.os_version),
        **spec.labels,
    }
    annotations = {KWOK_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0", **spec.annotations}
    if spec.devices:
        annotations[DEVICES_ANNOTATION] = json.dumps(dict(spec.devices), sort_keys=True)
    ident = uuid.uuid5(uuid.NAMESPACE_DNS, f"{spec.name}.sim.sro.dev")
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": spec.name, "labels": labels, "annotations": annotations},
        "spec": {},
        "status": {
            "capacity": dict(spec.capacity),
            "allocatable": dict(spec.capacity),
            "nodeInfo": node_info(
                spec.kernel,
                os_image=spec.os_image or os_image(spec.os_id, spec.os_version),
                arch=spec.arch,
                machine=ident.hex,
            ),
        },
    }
    if spec.taints:
        node["spec"]["taints"] = [dict(t) for t in spec.taints]
    return node


def node_info(kernel: str, *, os_image: str, arch: str, machine: str) -> dict[str, str]:
    """status.nodeInfo as a kubelet reports it; the boot id changes with the kernel (a reboot)."""
    return {
        "architecture": arch,
        "bootID": str(uuid.uuid5(uuid.NAMESPACE_OID, f"{machine}/{kernel}")),
        "containerRuntimeVersion": "containerd://2.1.4",
        "kernelVersion": kernel,
        "kubeletVersion": KUBELET_VERSION,
        "machineID": machine,
        "operatingSystem": "linux",
        "osImage": os_image,
        "systemUUID": str(uuid.UUID(machine)),
    }
