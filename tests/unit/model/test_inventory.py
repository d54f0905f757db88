"""Node inventories for ``sro render --nodes`` (sro.model.inventory).

Covers the hack/inventory pool format (count/prefix, explicit names, PCI vendors,
labels, taints), files of Node objects (a List or several documents), and errors.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sro.errors import RecipeInvalid
from sro.model import inventory, kernels, views

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


def test_pools_expand_into_nodes_with_nfd_labels_and_node_info() -> None:
    nodes = inventory.load(
        """
pools:
- name: gpu
  count: 2
  kernel: 5.14.0-427.13.1.el9_4.x86_64
  os: {id: rhel, versionId: "9.4"}
  pci: ["10de"]
  labels: {zone: a}
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
- name: cpu
  names: [plain]
  kernel: 5.15.0-105-generic
  os: {id: ubuntu, versionId: "22.04"}
  arch: arm64
""",
        file="inv.yaml",
    )
    assert [n.name for n in nodes] == ["gpu-0", "gpu-1", "plain"]
    gpu = nodes[0]
    assert gpu.labels["feature.node.kubernetes.io/pci-10de.present"] == "true"
    assert gpu.labels[views.OS_ID_LABEL] == "rhel" and gpu.labels["zone"] == "a"
    assert gpu.taints == (views.Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule"),)
    assert gpu.os_image == "Red Hat Enterprise Linux 9.4 (Plow)"
    plain = nodes[2]
    assert kernels.node_group(plain).arch == "aarch64"
    assert "feature.node.kubernetes.io/pci-10de.present" not in plain.labels


def test_a_file_of_node_objects_is_read_as_is() -> None:
    nodes = inventory.load(
        """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: b, labels: {x: "1"}}, status: {nodeInfo: {kernelVersion: k2}}}
---
apiVersion: v1
kind: Node
metadata: {name: a}
status: {nodeInfo: {kernelVersion: k1, osImage: Ubuntu 22.04}}
""",
        file="nodes.yaml",
    )
    assert [(n.name, n.kernel) for n in nodes] == [("a", "k1"), ("b", "k2")]


def test_the_projects_example_inventories_load() -> None:
    for path in sorted((REPO / "hack" / "inventory").glob("*.yaml")):
        assert inventory.load(path.read_text(), file=str(path)), path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("pools:\n- {name: x}\n", "'kernel' and 'os: {id, versionId}' are required"),
        ("pools: [3]\n", "pools[0] must be a mapping"),
        ("just text\n", "expected an inventory"),
        ("pools: [\n", "invalid YAML"),
    ],
)
def test_malformed_inventories_are_refused_naming_the_file(text: str, message: str) -> None:
    with pytest.raises(RecipeInvalid) as caught:
        inventory.load(text, file="inv.yaml")
    assert message in str(caught.value) and str(caught.value).startswith("inv.yaml")
