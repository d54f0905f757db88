"""Node inventories for ``sro render --nodes`` (sro.model.inventory).

Covers the hack/inventory pool format (count/prefix, explicit names, PCI vendors,
labels, taints), files of Node objects (a List or several documents), and errors.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sro import errors
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


P = "pools:\n- kernel: k\n  os: {id: r, versionId: '9'}\n"  # a valid pool, then the line under test


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        (P + "  cuont: 2\n", "unknown keys", 4),
        (P + "  count: -1\n", "pools[0].count", 4),
        (P + "  count: 1e9\n", "pools[0].count", 4),
        ("pools:\n- name: g\n  kernel: k\n  os: {id: rhel}\n", "os: expected {id: ..., versionId: ...}", 4),
        ("pools:\n- name: g\n  kernel: [a]\n  os: {id: r, versionId: '9'}\n", "pools[0].kernel", 3),
        ("pools:\n- name: g\n  names: [Bad_Name]\n  kernel: k\n  os: {id: r, versionId: '9'}\n", "DNS", 3),
        (P + "  names: [a]\n  count: 2\n", "either", 4),
        (P + "  labels: {'a b': x}\n", "label 'a b'", 4),
        (P + "  taints: [{key: t, effect: Never}]\n", "effect", 4),
        (P + "  devices: {gpu: many}\n", "devices.gpu", 4),
        (P + "  broken: 'yes'\n", "true or false", 4),
        ("pools:\n- kernel: k\n  kernel: j\n  os: {id: r, versionId: '9'}\n", "duplicate key 'kernel'", 3),
        (P + "  names: [a]\n" + P[7:] + "  names: [a]\n", "'a' is described twice", 0),
    ],
)  # fmt: skip
def test_an_error_names_the_file_the_line_and_the_field(text: str, message: str, line: int) -> None:
    with pytest.raises(inventory.InventoryInvalid) as caught:
        inventory.load(text, file="inv.yaml")
    assert message in str(caught.value)
    assert caught.value.location == errors.Location(file="inv.yaml", line=line)


HOSTILE = {
    "recursive alias": "pools: &p [*p]\n",
    "recursive labels": P + "  labels: &l {a: *l}\n",
    "alias bomb": "kind: List\n"
    + "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}' if i else 'x'] * 9)}]\n" for i in range(9))
    + "items: [{kind: Node, metadata: {name: a, labels: {x: *l8}}}]\n",
    "merge keys": "base: &b {kernel: k}\npools: [{<<: *b, os: {id: r, versionId: '9'}}]\n",
    "deep nesting": "pools: " + "[" * 5000 + "]" * 5000 + "\n",
    "a million nodes": "pools: [{kernel: k, os: {id: r, versionId: '9'}, count: 1000000}]\n",
    "many large pools": "pools: ["
    + ", ".join(["{kernel: k, os: {id: r, versionId: '9'}, count: 60000}"] * 3)
    + "]\n",
    "a binary value": "pools: [{kernel: !!binary aGVsbG8=, os: {id: r, versionId: '9'}}]\n",
    "a python tag": "pools: [{kernel: !!python/object:os.system x, os: {id: r, versionId: '9'}}]\n",
    "a node with a list for metadata": "kind: Node\nmetadata: [a]\n",
    "a node without a name": "kind: Node\nmetadata: {labels: {a: b}}\n",
    "a node with nested label values": "kind: Node\nmetadata: {name: a, labels: {a: [1, 2]}}\n",
    "a node list with a string item": "kind: List\nitems: [just-a-string]\n",
    "a node with taints as a mapping": "kind: Node\nmetadata: {name: a}\nspec: {taints: {key: x}}\n",
    "a node with conditions of strings": "kind: Node\nmetadata: {name: a}\nstatus: {conditions: [Ready]}\n",
    "a node with a nested kernel": "kind: Node\nmetadata: {name: a}\nstatus: {nodeInfo: {osImage: [a]}}\n",
    "an inventory with extra top-level keys": "pools: []\nnodes: []\n",
    "a tab": "pools:\n\t- x\n",
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_malformed_or_hostile_text_is_refused_with_an_inventory_error_only(text: str) -> None:
    with pytest.raises(inventory.InventoryInvalid) as caught:
        inventory.load(text, file="evil.yaml")
    assert str(caught.value).startswith("evil.yaml")


def test_the_simulators_reading_of_a_pool_is_the_renders() -> None:
    (machine,) = inventory.load_machines(
        "pools:\n- {name: g, kernel: 5.15.0-105-generic, os: {id: ubuntu, versionId: '22.04'}, broken: true,"
        " taints: [{key: a, effect: NoExecute}], labels: {zone: true}}\n",
        file="inv.yaml",
    )
    (node,) = inventory.load(
        "pools:\n- {name: g, kernel: 5.15.0-105-generic, os: {id: ubuntu, versionId: '22.04'}, broken: true,"
        " taints: [{key: a, effect: NoExecute}], labels: {zone: true}}\n",
        file="inv.yaml",
    )
    assert machine.annotations == {"sim.sro.dev/broken": "true"}
    assert node == views.NodeView.from_body(inventory.node_body(machine))
    assert (
        node.labels["zone"] == "true"
        and node.labels["feature.node.kubernetes.io/kernel-version.minor"] == "15"
    )
    assert node.taints == (views.Taint(key="a", value="", effect="NoExecute"),)
    assert (node.kernel, node.os_image) == ("5.15.0-105-generic", "Ubuntu 22.04 LTS")
