"""Node inventories: the YAML format, a realistic generated mix, and Node objects.

A node here is what Node Feature Discovery and a kubelet would have published for a
machine: NFD's kernel, OS and PCI labels plus a matching ``status.nodeInfo``. The
devices a machine carries are *not* in its capacity at creation; they are recorded
in the ``sim.sro.dev/devices`` annotation and appear only while a device-plugin pod
runs there (see ``devsim``). The format is documented in hack/inventory/example.yaml and
parsed by ``sro.model.inventory``; this module generates inventories and turns parsed
machines into the Node objects kwok serves.
"""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

from simcluster import host
from sro.model import inventory as model_inventory

NFD = model_inventory.NFD
SIM = model_inventory.SIM
DEVICES_ANNOTATION = f"{SIM}/devices"
POOL_LABEL = model_inventory.POOL_LABEL
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_MANAGED = "fake"
"""``KWOK_ANNOTATION``'s value on the nodes kwok runs (``controlplane``'s annotation selector)."""
KUBELET_VERSION = "v1.36.3"

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


# The format is parsed in one place, sro.model.inventory (the project's package, installed
# editable in .venv, which hack/cluster runs under), so a simulated cluster and
# `sro render --nodes` read an inventory identically.
InventoryError = model_inventory.InventoryInvalid
NodeSpec = model_inventory.Machine
os_image = model_inventory.os_image
kernel_labels = model_inventory.kernel_labels
os_labels = model_inventory.os_labels


def parse(data: Any, *, file: str = "<inventory>") -> list[NodeSpec]:
    """Node specs from an inventory document (already loaded from YAML, or generated)."""
    return model_inventory.machines(data, file=file)


def load(text: str, *, file: str = "<inventory>") -> list[NodeSpec]:
    """Node specs from an inventory file's text; errors name the file and line."""
    return model_inventory.load_machines(text, file=file)


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
    """The Node to create: sro.model.inventory's body plus what NFD, kwok and a kubelet add
    (at a real node's size: ``host``); no devices yet."""
    node = model_inventory.node_body(spec)
    meta = node["metadata"]
    # What NFD and the platform publish besides, at a real node's size (``host``); the
    # inventory's own labels win where they meet.
    meta["labels"] = {**host.node_labels(arch=spec.arch), "type": "kwok", **meta["labels"]}
    annotations = {
        **host.node_annotations(name=spec.name, all_labels=meta["labels"]),
        KWOK_ANNOTATION: KWOK_MANAGED,
        "node.alpha.kubernetes.io/ttl": "0",
        **meta["annotations"],
    }
    if spec.devices:
        annotations[DEVICES_ANNOTATION] = json.dumps(dict(spec.devices), sort_keys=True)
    meta["annotations"] = annotations
    ident = uuid.uuid5(uuid.NAMESPACE_DNS, f"{spec.name}.sim.sro.dev")
    node["status"] = {
        "capacity": dict(spec.capacity),
        "allocatable": dict(spec.capacity),
        "nodeInfo": node_info(spec.kernel, os_image=spec.os_image, arch=spec.arch, machine=ident.hex),
        "images": host.node_images(),
    }
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
