"""The simulator's node inventories (hack/lib/simcluster/inventory.py): format, mix, Node objects."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from simcluster import host, inventory

from sro.model import inventory as model_inventory
from sro.model import views

pytestmark = pytest.mark.unit

NFD = "feature.node.kubernetes.io"
EXAMPLE = Path(__file__).resolve().parents[2] / "hack" / "inventory" / "example.yaml"


def test_the_documented_example_inventory_parses() -> None:
    specs = inventory.load(EXAMPLE.read_text())
    assert [s.name for s in specs][:3] == ["gpu-rhel94-0", "gpu-rhel94-1", "dgx-ubuntu-0"]
    broken = [s for s in specs if s.annotations.get("sim.sro.dev/broken") == "true"]
    assert [s.pool for s in broken] == ["gpu-rhel92-broken"]


def one_node(**pool: object) -> dict:
    """The Node object of a one-node pool of NVIDIA machines with ``pool``'s fields."""
    (spec,) = inventory.parse({"pools": [{"name": "g", "count": 1, "pci": ["10de"], **pool}]})
    return inventory.node_object(spec)


def test_a_node_carries_nfd_labels_and_node_info_but_no_devices_in_capacity() -> None:
    node = one_node(
        kernel="5.15.0-105-generic",
        os={"id": "ubuntu", "versionId": "22.04"},
        devices={"nvidia.com/gpu": 8},
    )
    labels = node["metadata"]["labels"]
    assert labels[f"{NFD}/kernel-version.full"] == "5.15.0-105-generic"
    assert (labels[f"{NFD}/kernel-version.major"], labels[f"{NFD}/kernel-version.minor"]) == ("5", "15")
    assert labels[f"{NFD}/system-os_release.ID"] == "ubuntu"
    assert labels[f"{NFD}/system-os_release.VERSION_ID.major"] == "22"
    assert labels[f"{NFD}/system-os_release.VERSION_ID.minor"] == "04"
    assert labels[f"{NFD}/pci-10de.present"] == "true"
    assert node["status"]["nodeInfo"]["kernelVersion"] == "5.15.0-105-generic"
    assert node["status"]["nodeInfo"]["osImage"] == "Ubuntu 22.04 LTS"
    assert "nvidia.com/gpu" not in node["status"]["capacity"]
    assert json.loads(node["metadata"]["annotations"]["sim.sro.dev/devices"]) == {"nvidia.com/gpu": 8}


def test_a_simulated_node_is_of_a_real_nodes_size_and_the_inventorys_labels_win() -> None:
    node = one_node(
        kernel="5.14.0-427.13.1.el9_4.x86_64",
        os={"id": "rhel", "versionId": "9.4"},
        labels={f"{NFD}/cpu-model.vendor_id": "AMD"},
    )
    labels = node["metadata"]["labels"]
    nfd = [k for k in labels if k.startswith(f"{NFD}/")]
    assert len(nfd) >= 50  # NFD on a server publishes dozens of CPU and kernel labels
    assert labels[f"{NFD}/cpu-model.vendor_id"] == "AMD"  # the pool's label, not the host default
    listed = node["metadata"]["annotations"]["nfd.node.kubernetes.io/feature-labels"].split(",")
    assert sorted(listed) == sorted(k.removeprefix(f"{NFD}/") for k in nfd)
    images = node["status"]["images"]
    assert 20 <= len(images) <= 50  # a kubelet reports at most nodeStatusMaxImages (50)
    sizes = [i["sizeBytes"] for i in images]
    assert sizes == sorted(sizes, reverse=True)
    assert all(len(i["names"]) == 2 and "@sha256:" in i["names"][0] for i in images)
    assert len(json.dumps(node)) > 8_000


def test_an_inventory_with_an_unknown_key_is_refused() -> None:
    with pytest.raises(inventory.InventoryError, match="nodeSelectr"):
        inventory.parse(
            {"pools": [{"kernel": "k", "os": {"id": "rhel", "versionId": "9.4"}, "nodeSelectr": {}}]}
        )


@pytest.mark.parametrize(("nodes", "kernels"), [(50, 3), (1000, 6), (7, 12)])
def test_a_generated_mix_has_the_asked_sizes_and_about_a_fifth_without_accelerators(
    nodes: int, kernels: int
) -> None:
    specs = inventory.parse(inventory.generate(nodes=nodes, kernels=kernels))
    assert len(specs) == nodes
    assert len({s.name for s in specs}) == nodes
    assert len({s.kernel for s in specs}) == min(nodes, kernels)
    plain = [s for s in specs if not any(k.startswith(f"{NFD}/pci-") for k in s.labels)]
    assert len(plain) == nodes // 5
    assert all(s.devices for s in specs if s not in plain)
    if nodes >= 50:
        vendors = Counter(k for s in specs for k in s.labels if k.startswith(f"{NFD}/pci-"))
        assert set(vendors) == {f"{NFD}/pci-{v}.present" for v in ("10de", "15b3", "8086", "1002")}
        assert len({(s.os_id, s.os_version) for s in specs}) == min(kernels, 3)


def test_the_same_arguments_always_generate_the_same_inventory() -> None:
    assert inventory.generate(nodes=40, kernels=4) == inventory.generate(nodes=40, kernels=4)


def test_the_simulated_node_is_what_sro_render_reads_from_the_same_inventory() -> None:
    text = EXAMPLE.read_text()
    simulated = {s.name: views.NodeView.from_body(inventory.node_object(s)) for s in inventory.load(text)}
    rendered = {n.name: n for n in model_inventory.load(text, file=str(EXAMPLE))}
    assert simulated.keys() == rendered.keys()
    for name, node in rendered.items():
        sim = simulated[name]
        besides = host.host_label_keys() | {"type"}
        assert {k: v for k, v in sim.labels.items() if k not in besides} == node.labels, name
        assert (sim.taints, sim.kernel, sim.os_image, sim.architecture) == (
            node.taints,
            node.kernel,
            node.os_image,
            node.architecture,
        )


def test_an_inventory_error_names_the_file_and_line() -> None:
    with pytest.raises(inventory.InventoryError, match=r"^inv\.yaml:3: pools\[0\]\.count"):
        inventory.load(
            "pools:\n- kernel: k\n  count: lots\n  os: {id: rhel, versionId: '9.4'}\n", file="inv.yaml"
        )
