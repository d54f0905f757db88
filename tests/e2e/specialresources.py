"""Reading and writing SpecialResources, their objects and their nodes, through kubectl.

Small helpers the end-to-end tests share: create a SpecialResource for a node pool, read
its status and conditions, list what it owns, read node labels, and wait (with a deadline,
never a sleep) for a condition of any of these.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from support import cluster as cluster_mod
from support import waiting

OWNER = "sro.dev/owner"
GROUP_LABEL = "e2e.sro.dev/group"
KERNEL_LABEL = "feature.node.kubernetes.io/kernel-version.full"
GPU_LABEL = "feature.node.kubernetes.io/pci-10de.present"


def manifest(
    name: str,
    *,
    recipe: str,
    node_selector: Mapping[str, str] | None = None,
    set_values: Mapping[str, Any] | None = None,
    extra_spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"recipe": recipe}
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if set_values:
        spec["set"] = dict(set_values)
    spec.update(extra_spec or {})
    return {
        "apiVersion": "sro.dev/v1alpha1",
        "kind": "SpecialResource",
        "metadata": {"name": name},
        "spec": spec,
    }


def create(cluster: cluster_mod.Cluster, body: Mapping[str, Any]) -> None:
    cluster.kubectl("create", "-f", "-", input=json.dumps(body))


def get(cluster: cluster_mod.Cluster, name: str) -> dict[str, Any] | None:
    proc = cluster.kubectl("get", "specialresource", name, "-o", "json", check=False)
    if proc.returncode != 0:
        return None
    found: dict[str, Any] = json.loads(proc.stdout)
    return found


def status(cluster: cluster_mod.Cluster, name: str) -> dict[str, Any]:
    sr = get(cluster, name) or {}
    found: dict[str, Any] = sr.get("status") or {}
    return found


def condition(sr_status: Mapping[str, Any], kind: str) -> dict[str, Any]:
    for cond in sr_status.get("conditions") or ():
        if cond.get("type") == kind:
            return dict(cond)
    return {}


def delete(cluster: cluster_mod.Cluster, name: str, *, wait: bool = False) -> None:
    cluster.kubectl(
        "delete",
        "specialresource",
        name,
        "--ignore-not-found",
        f"--wait={str(wait).lower()}",
        check=False,
        timeout=180,
    )


def owned(
    cluster: cluster_mod.Cluster, kind: str, sr_name: str, *, namespace: str | None = None
) -> list[dict[str, Any]]:
    """Objects of ``kind`` labelled as owned by ``sr_name`` (all namespaces unless one is given)."""
    where = ["-n", namespace] if namespace else ["-A"]
    found = cluster.kubectl_json("get", kind, *where, "-l", f"{OWNER}={sr_name}")
    items: list[dict[str, Any]] = found["items"]
    return items


def nodes(cluster: cluster_mod.Cluster, selector: Mapping[str, str]) -> list[dict[str, Any]]:
    text = ",".join(f"{k}={v}" for k, v in selector.items())
    items: list[dict[str, Any]] = cluster.kubectl_json("get", "nodes", "-l", text)["items"]
    return items


def node_labels(node: Mapping[str, Any]) -> dict[str, str]:
    return dict((node.get("metadata") or {}).get("labels") or {})


def sr_labels(node: Mapping[str, Any], sr_name: str) -> dict[str, str]:
    """The labels of ``sr_name`` a node carries (``<sr>.sro.dev/...``)."""
    prefix = f"{sr_name}.sro.dev/"
    return {k: v for k, v in node_labels(node).items() if k.startswith(prefix)}


def pods(cluster: cluster_mod.Cluster, namespace: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = cluster.kubectl_json("get", "pods", "-n", namespace)["items"]
    return items


def ready_condition(sr_status: Mapping[str, Any]) -> bool:
    cond = condition(sr_status, "Ready")
    return cond.get("status") == "True" and cond.get("reason") == "AllStatesComplete"


async def wait_ready(
    cluster: cluster_mod.Cluster,
    name: str,
    *,
    within: float,
    where: Callable[[dict[str, Any]], bool] = lambda _: True,
) -> dict[str, Any]:
    """Wait until the SpecialResource is Ready and its status satisfies ``where``; returns
    the status. After a change to a SpecialResource that is Ready already, ``where`` says
    what shows the change was seen (its node counts, its kernels): Ready alone may still
    be the status from before it."""

    def check() -> dict[str, Any] | None:
        found = status(cluster, name)
        return found if ready_condition(found) and where(found) else None

    result: dict[str, Any] = await waiting.wait_for(
        check, timeout=within, interval=1.0, message=f"SpecialResource {name} Ready"
    )
    return result


async def wait_degraded(
    cluster: cluster_mod.Cluster, name: str, reason: str, *, within: float
) -> dict[str, Any]:
    """Wait until Degraded is True with ``reason``; returns the condition."""

    def check() -> dict[str, Any] | None:
        cond = condition(status(cluster, name), "Degraded")
        return cond if cond.get("status") == "True" and cond.get("reason") == reason else None

    result: dict[str, Any] = await waiting.wait_for(
        check, timeout=within, interval=0.5, message=f"SpecialResource {name} Degraded with {reason}"
    )
    return result


def printed_row(cluster: cluster_mod.Cluster, name: str) -> list[str]:
    """The ``kubectl get sr NAME`` row, split into columns."""
    out = cluster.kubectl("get", "sr", name, "--no-headers").stdout.strip()
    return out.split()


def pool_inventory(group: str, pools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """An inventory whose pools all carry ``e2e.sro.dev/group: <group>`` and unique names."""
    out = []
    for i, pool in enumerate(pools):
        entry = dict(pool)
        entry.setdefault("name", f"{group}-{i}")
        entry.setdefault("prefix", f"{group}-{i}")
        entry["labels"] = {**(pool.get("labels") or {}), GROUP_LABEL: group}
        out.append(entry)
    return {"pools": out}


def events(cluster: cluster_mod.Cluster, sr_name: str) -> list[dict[str, Any]]:
    """Events about the SpecialResource (events.k8s.io/v1, in ``default`` where sro posts them)."""
    found = cluster.kubectl_json("get", "events.v1.events.k8s.io", "-n", "default")
    items: list[dict[str, Any]] = found["items"]
    return [
        e
        for e in items
        if (e.get("regarding") or {}).get("name") == sr_name
        and (e.get("regarding") or {}).get("kind") == "SpecialResource"
    ]


def ds_state_map(cluster: cluster_mod.Cluster, sr_name: str) -> dict[str, str]:
    """DaemonSet name -> the state it belongs to (its ``sro.dev/state`` label)."""
    return {
        ds["metadata"]["name"]: ds["metadata"]["labels"].get("sro.dev/state", "")
        for ds in owned(cluster, "daemonsets", sr_name, namespace=sr_name)
    }


def state_of(pod: Mapping[str, Any], ds_states: Mapping[str, str]) -> str:
    """A bare pod's own ``sro.dev/state`` label, or its DaemonSet's."""
    labels = pod["metadata"].get("labels") or {}
    if "sro.dev/state" in labels:
        return str(labels["sro.dev/state"])
    owners = pod["metadata"].get("ownerReferences") or []
    return next((ds_states.get(o["name"], "") for o in owners if o.get("kind") == "DaemonSet"), "")


PodsByNode = dict[str, dict[str, list[dict[str, Any]]]]


def pods_by_node_and_state(cluster: cluster_mod.Cluster, sr_name: str) -> PodsByNode:
    """node -> state -> that node's pods of the state."""
    ds_states = ds_state_map(cluster, sr_name)
    out: PodsByNode = {}
    for pod in pods(cluster, sr_name):
        node = pod["spec"].get("nodeName", "")
        out.setdefault(node, {}).setdefault(state_of(pod, ds_states), []).append(pod)
    return out
