"""Node inventories: the one parser of the format ``hack/cluster`` and ``sro render`` read.

``sro render --nodes FILE`` must show what ``sro run`` would apply to a cluster built
from the same inventory, so the simulated cluster (``hack/lib/simcluster``) and the
offline render both read the file here and build their Nodes from the same
``node_body``: NFD's kernel, OS and PCI labels plus a kubelet-like ``status.nodeInfo``.
The simulator only adds what a real kubelet adds on top (capacity, boot id, kwok's marks).
A file for ``sro render`` may instead hold Node objects (a ``kubectl get nodes -o yaml``
List, or several documents).

The text is typed by whoever runs the command, so every problem is an ``InventoryInvalid``
naming the file, the line and the field (``inv.yaml:7: pools[0].count: ...``), never a
traceback; sizes are bounded so a small file cannot ask for millions of nodes. The format
is documented in hack/inventory/example.yaml::

    pools:
      - name: gpu-rhel94            # or prefix:
        count: 3                    # or names: [a, b]
        kernel: 5.14.0-427.13.1.el9_4.x86_64
        os: {id: rhel, versionId: "9.4"}
        pci: [10de]                 # -> feature.node.kubernetes.io/pci-10de.present=true
        labels: {...}
        taints: [{key: ..., value: ..., effect: ...}]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from sro import errors
from sro.model import inventory_yaml as iyaml
from sro.model import names, views

NFD = "feature.node.kubernetes.io"
SIM = "sim.sro.dev"
POOL_LABEL = f"{SIM}/pool"
BROKEN_ANNOTATION = f"{SIM}/broken"
DEFAULT_CAPACITY: Mapping[str, str] = MappingProxyType(
    {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "500Gi"}
)
MAX_NODES = 100_000
"""Nodes one file may describe: far beyond any real fleet, far below what exhausts memory."""
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
POOL_KEYS = frozenset(
    {
        "name", "count", "names", "prefix", "kernel", "os", "osImage", "arch", "pci",
        "labels", "annotations", "devices", "taints", "capacity", "broken",
    }
)  # fmt: skip

InventoryInvalid = iyaml.InventoryInvalid
_T = TypeVar("_T")


def _frozen(mapping: Mapping[str, _T]) -> Mapping[str, _T]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, kw_only=True)
class Machine:
    """One node of a pool, as the inventory describes it (shorthands expanded)."""

    name: str
    pool: str
    kernel: str
    os_id: str
    os_version: str
    os_image: str
    arch: str = "amd64"
    labels: Mapping[str, str] = field(default_factory=lambda: _frozen({}))  # the pool's, with PCI labels
    annotations: Mapping[str, str] = field(default_factory=lambda: _frozen({}))  # with `broken`
    devices: Mapping[str, int] = field(default_factory=lambda: _frozen({}))
    taints: tuple[views.Taint, ...] = ()
    capacity: Mapping[str, str] = field(default_factory=lambda: DEFAULT_CAPACITY)


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


def node_body(machine: Machine) -> dict[str, Any]:
    """The Node as NFD and a kubelet publish it for ``machine``: labels, taints, nodeInfo."""
    labels = {
        "kubernetes.io/hostname": machine.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": machine.arch,
        POOL_LABEL: machine.pool,
        **kernel_labels(machine.kernel),
        **os_labels(machine.os_id, machine.os_version),
        **machine.labels,
    }
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": machine.name, "labels": labels, "annotations": dict(machine.annotations)},
        "spec": {},
        "status": {
            "nodeInfo": {
                "kernelVersion": machine.kernel,
                "osImage": machine.os_image,
                "architecture": machine.arch,
            }
        },
    }
    if machine.taints:
        body["spec"]["taints"] = [t.to_body() for t in machine.taints]
    return body


# --- the pool format ------------------------------------------------------------------


class _Pool:
    """Reads one pool's fields, each error naming the field and its line."""

    def __init__(self, value: Any, *, where: str, file: str) -> None:
        self.where, self.file = where, file
        self.body = iyaml.mapping(value, where=where, file=file)
        unknown = sorted(str(k) for k in self.body if k not in POOL_KEYS)
        if unknown:
            self.fail(f"unknown keys {unknown} (known: {', '.join(sorted(POOL_KEYS))})", unknown[0])

    def fail(self, message: str, key: str | None = None) -> None:
        line = iyaml.line_of(self.body, key)
        raise InventoryInvalid(
            f"{self.where}: {message}", location=errors.Location(file=self.file, line=line)
        )

    def at(self, key: str) -> tuple[str, int]:
        return f"{self.where}.{key}", iyaml.line_of(self.body, key)

    def text(self, key: str, *, default: str = "", required: bool = False) -> str:
        if key not in self.body:
            if required:
                self.fail(f"'{key}' is required")
            return default
        where, line = self.at(key)
        return iyaml.scalar(self.body[key], where=where, file=self.file, line=line)

    def items(self, key: str, check: Callable[[Any, str, int], _T]) -> list[_T]:
        where, line = self.at(key)
        values = iyaml.sequence(self.body.get(key), where=where, file=self.file, line=line)
        return [check(v, f"{where}[{i}]", iyaml.line_of(v) or line) for i, v in enumerate(values)]

    def pairs(self, key: str, check: Callable[[Any, str, int], _T]) -> dict[str, _T]:
        where, line = self.at(key)
        body = iyaml.mapping(self.body.get(key), where=where, file=self.file, line=line, optional=True)
        out: dict[str, _T] = {}
        for k, v in body.items():
            name = iyaml.scalar(k, where=f"{where} key", file=self.file, line=line)
            out[name] = check(v, f"{where}.{name}", iyaml.line_of(body, k) or line)
        return out


def _pool_machines(value: Any, index: int, *, file: str) -> list[Machine]:
    p = _Pool(value, where=f"pools[{index}]", file=file)
    if "kernel" not in p.body or "os" not in p.body:
        p.fail("'kernel' and 'os: {id, versionId}' are required")
    name = p.text("name") or p.text("prefix") or f"pool{index}"
    _check(names.label_value_problem(name), p, "name")
    kernel = p.text("kernel", required=True)
    _check(names.label_value_problem(kernel) or ("must not be empty" if not kernel else None), p, "kernel")
    where, line = p.at("os")
    os_ = iyaml.mapping(p.body["os"], where=where, file=file, line=line)
    if set(os_) != {"id", "versionId"}:
        p.fail(f"os: expected {{id: ..., versionId: ...}}, got keys {sorted(str(k) for k in os_)}", "os")
    os_id = iyaml.scalar(os_["id"], where=f"{where}.id", file=file, line=line)
    version = iyaml.scalar(os_["versionId"], where=f"{where}.versionId", file=file, line=line)
    node_names = _node_names(p, name, index)
    labels = p.pairs("labels", lambda v, w, n: iyaml.scalar(v, where=w, file=file, line=n))
    for vendor in p.items("pci", lambda v, w, n: iyaml.scalar(v, where=w, file=file, line=n)):
        labels[f"{NFD}/pci-{vendor}.present"] = "true"
    for key, val in labels.items():
        _check(names.label_key_problem(key), p, "labels", f"label {key!r}: ")
        _check(names.label_value_problem(val), p, "labels", f"label {key!r}: value {val!r} ")
    annotations = p.pairs("annotations", lambda v, w, n: iyaml.scalar(v, where=w, file=file, line=n))
    if "broken" in p.body:
        where, line = p.at("broken")
        if iyaml.boolean(p.body["broken"], where=where, file=file, line=line):
            annotations[BROKEN_ANNOTATION] = "true"
    devices = p.pairs("devices", lambda v, w, n: iyaml.count(v, where=w, file=file, line=n))
    capacity = p.pairs("capacity", lambda v, w, n: iyaml.scalar(v, where=w, file=file, line=n))
    taints = tuple(p.items("taints", lambda v, w, n: _taint(v, where=w, file=file, line=n)))
    frozen_labels, frozen_annotations = _frozen(labels), _frozen(annotations)
    frozen_devices, frozen_capacity = _frozen(devices), _frozen({**DEFAULT_CAPACITY, **capacity})
    image, arch = p.text("osImage") or os_image(os_id, version), p.text("arch", default="amd64")
    return [
        Machine(
            name=n,
            pool=name,
            kernel=kernel,
            os_id=os_id,
            os_version=version,
            os_image=image,
            arch=arch,
            labels=frozen_labels,
            annotations=frozen_annotations,
            devices=frozen_devices,
            taints=taints,
            capacity=frozen_capacity,
        )
        for n in node_names
    ]


def _check(problem: str | None, pool: _Pool, key: str, prefix: str = "") -> None:
    if problem:
        pool.fail(f"{key}: {prefix}{problem}", key)


def _node_names(p: _Pool, name: str, index: int) -> list[str]:
    if "names" in p.body:
        if "count" in p.body or "prefix" in p.body:
            p.fail("give either 'names' or 'count' (and 'prefix'), not both", "names")
        found = p.items("names", lambda v, w, n: iyaml.scalar(v, where=w, file=p.file, line=n))
    else:
        where, line = p.at("count")
        count = iyaml.count(p.body.get("count", 1), where=where, file=p.file, line=line)
        if count > MAX_NODES:
            p.fail(f"count: {count} is more than {MAX_NODES} nodes", "count")
        prefix = p.text("prefix") or name
        found = [f"{prefix}-{n}" for n in range(count)]
    for node_name in found:
        if not names.is_dns_subdomain(node_name):
            p.fail(f"node name {node_name!r} is not a DNS subdomain (lowercase, digits, '-', '.')", "names")
    return found


def _taint(value: Any, *, where: str, file: str, line: int) -> views.Taint:
    body = iyaml.mapping(value, where=where, file=file, line=line)
    if not set(body) <= {"key", "value", "effect"} or "key" not in body:
        raise InventoryInvalid(
            f"{where}: expected {{key: ..., value: ..., effect: ...}}",
            location=errors.Location(file=file, line=line),
        )
    key = iyaml.scalar(body["key"], where=f"{where}.key", file=file, line=line)
    val = iyaml.scalar(body.get("value", ""), where=f"{where}.value", file=file, line=line)
    effect = iyaml.scalar(body.get("effect", "NoSchedule"), where=f"{where}.effect", file=file, line=line)
    if effect not in TAINT_EFFECTS or names.label_key_problem(key):
        problem = names.label_key_problem(key) or f"effect must be one of {', '.join(TAINT_EFFECTS)}"
        raise InventoryInvalid(f"{where}: {problem}", location=errors.Location(file=file, line=line))
    return views.Taint(key=key, value=val, effect=effect)


def machines(document: Any, *, file: str) -> list[Machine]:
    """The machines of one inventory document (``{pools: [...]}``, already loaded), in file order."""
    body = iyaml.mapping(document, where="inventory", file=file)
    if set(body) != {"pools"}:
        raise InventoryInvalid(
            "an inventory is a mapping with only a 'pools' list",
            location=errors.Location(file=file, line=iyaml.line_of(body)),
        )
    pools = iyaml.sequence(body["pools"], where="pools", file=file, line=iyaml.line_of(body, "pools"))
    found: list[Machine] = []
    for i, pool in enumerate(pools):
        if not isinstance(pool, Mapping):
            raise InventoryInvalid(
                f"pools[{i}] must be a mapping",
                location=errors.Location(file=file, line=iyaml.line_of(pools)),
            )
        found.extend(_pool_machines(pool, i, file=file))
        if len(found) > MAX_NODES:
            raise InventoryInvalid(f"more than {MAX_NODES} nodes", location=errors.Location(file=file))
    _unique((m.name for m in found), file=file)
    return found


def _unique(node_names: Iterable[str], *, file: str) -> None:
    seen: set[str] = set()
    for name in node_names:
        if name in seen:
            raise InventoryInvalid(f"node {name!r} is described twice", location=errors.Location(file=file))
        seen.add(name)


def load_machines(text: str, *, file: str) -> list[Machine]:
    """The machines of an inventory file (one YAML document)."""
    documents = [d for d in iyaml.load_all(text, file=file) if d is not None]
    if len(documents) != 1:
        raise InventoryInvalid(
            f"expected one inventory document, found {len(documents)}", location=errors.Location(file=file)
        )
    return machines(documents[0], file=file)


# --- inventories or Node objects, for sro render ---------------------------------------


def parse(documents: Iterable[Any], *, file: str) -> list[views.NodeView]:
    """Nodes from the documents of an inventory or Node file, sorted by name."""
    bodies: list[Mapping[str, Any]] = []
    for doc in documents:
        if doc is None:
            continue
        if isinstance(doc, Mapping) and "pools" in doc:
            bodies.extend(node_body(m) for m in machines(doc, file=file))
        elif isinstance(doc, Mapping) and doc.get("kind") == "Node":
            bodies.append(iyaml.node_object(doc, where="Node", file=file))
        elif isinstance(doc, Mapping) and isinstance(doc.get("items"), list):
            items = doc["items"]
            bodies.extend(
                iyaml.node_object(item, where=f"items[{i}]", file=file, line=iyaml.line_of(items))
                for i, item in enumerate(items)
                if not isinstance(item, Mapping) or item.get("kind", "Node") == "Node"
            )
        elif isinstance(doc, list):
            bodies.extend(
                iyaml.node_object(item, where=f"[{i}]", file=file, line=iyaml.line_of(doc))
                for i, item in enumerate(doc)
            )
        else:
            raise InventoryInvalid(
                "expected an inventory (pools: [...]) or Node objects",
                location=errors.Location(file=file, line=iyaml.line_of(doc)),
            )
        if len(bodies) > MAX_NODES:
            raise InventoryInvalid(f"more than {MAX_NODES} nodes", location=errors.Location(file=file))
    nodes = sorted((views.NodeView.from_body(b) for b in bodies), key=lambda n: n.name)
    _unique((n.name for n in nodes), file=file)
    return nodes


def load(text: str, *, file: str) -> list[views.NodeView]:
    """Nodes from the text of an inventory or Node file, sorted by name."""
    return parse(iyaml.load_all(text, file=file), file=file)
