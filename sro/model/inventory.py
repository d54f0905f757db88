"""Node inventories for offline rendering, in the format ``hack/cluster`` reads.

``sro render --nodes FILE`` must show what ``sro run`` would apply to a cluster built
from the same inventory, so the nodes are built the way the simulated cluster builds
them: NFD kernel, OS and PCI labels plus a kubelet-like ``status.nodeInfo``. A file may
instead hold Node objects (a ``kubectl get nodes -o yaml`` List, or several documents).

Inventory (see hack/inventory/)::

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

from collections.abc import Mapping
from typing import Any

import yaml

from sro import errors
from sro.model import views

NFD = "feature.node.kubernetes.io"


def _os_image(os_id: str, version: str) -> str:
    if os_id == "rhel":
        return f"Red Hat Enterprise Linux {version} (Plow)"
    if os_id == "ubuntu":
        return f"Ubuntu {version} LTS"
    return f"{os_id} {version}"


def _pool_nodes(pool: Mapping[str, Any], index: int, *, file: str) -> list[dict[str, Any]]:
    where = errors.Location(file=file)
    if "kernel" not in pool or not isinstance(pool.get("os"), Mapping):
        raise errors.RecipeInvalid(
            f"pools[{index}]: 'kernel' and 'os: {{id, versionId}}' are required", location=where
        )
    os_ = pool["os"]
    os_id = str(os_.get("id", ""))
    version = str(os_.get("versionId", os_.get("version_id", "")))
    kernel = str(pool["kernel"])
    name = str(pool.get("name") or pool.get("prefix") or f"pool{index}")
    if "names" in pool:
        node_names = [str(n) for n in pool["names"]]
    else:
        prefix = str(pool.get("prefix") or name)
        node_names = [f"{prefix}-{n}" for n in range(int(pool.get("count", 1)))]
    labels = {
        f"{NFD}/kernel-version.full": kernel,
        f"{NFD}/system-os_release.ID": os_id,
        f"{NFD}/system-os_release.VERSION_ID": version,
        f"{NFD}/system-os_release.VERSION_ID.major": version.split(".", maxsplit=1)[0],
    }
    if "." in version:
        labels[f"{NFD}/system-os_release.VERSION_ID.minor"] = version.split(".")[1]
    for vendor in pool.get("pci") or ():
        labels[f"{NFD}/pci-{vendor}.present"] = "true"
    labels.update({str(k): str(v) for k, v in (pool.get("labels") or {}).items()})
    arch = str(pool.get("arch", "amd64"))
    nodes = []
    for node_name in node_names:
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": node_name,
                    "labels": {
                        "kubernetes.io/hostname": node_name,
                        "kubernetes.io/os": "linux",
                        "kubernetes.io/arch": arch,
                        "sim.sro.dev/pool": name,
                        **labels,
                    },
                },
                "spec": {"taints": [dict(t) for t in pool.get("taints") or ()]},
                "status": {
                    "nodeInfo": {
                        "kernelVersion": kernel,
                        "osImage": str(pool.get("osImage") or _os_image(os_id, version)),
                        "architecture": arch,
                    }
                },
            }
        )
    return nodes


def parse(documents: list[Any], *, file: str) -> list[views.NodeView]:
    """Nodes from the documents of an inventory or Node file, sorted by name."""
    bodies: list[Mapping[str, Any]] = []
    for doc in documents:
        if doc is None:
            continue
        if isinstance(doc, Mapping) and isinstance(doc.get("pools"), list):
            for i, pool in enumerate(doc["pools"]):
                if not isinstance(pool, Mapping):
                    raise errors.RecipeInvalid(
                        f"pools[{i}] must be a mapping", location=errors.Location(file=file)
                    )
                bodies.extend(_pool_nodes(pool, i, file=file))
        elif isinstance(doc, Mapping) and doc.get("kind") == "Node":
            bodies.append(doc)
        elif isinstance(doc, Mapping) and isinstance(doc.get("items"), list):
            bodies.extend(
                i for i in doc["items"] if isinstance(i, Mapping) and i.get("kind", "Node") == "Node"
            )
        elif isinstance(doc, list):
            bodies.extend(i for i in doc if isinstance(i, Mapping))
        else:
            raise errors.RecipeInvalid(
                "expected an inventory (pools: [...]) or Node objects", location=errors.Location(file=file)
            )
    return sorted((views.NodeView.from_body(b) for b in bodies), key=lambda n: n.name)


def load(text: str, *, file: str) -> list[views.NodeView]:
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise errors.RecipeInvalid(f"invalid YAML: {exc}", location=errors.Location(file=file)) from None
    return parse(documents, file=file)
