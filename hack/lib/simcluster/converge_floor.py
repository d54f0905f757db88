"""The floor of ``hack/bench converge``: how fast the control plane itself runs a recipe.

sro walks states in order on each node, so it can never beat the control plane running
every rendered object at once. The floor is exactly that: the objects ``sro render
--live`` prints for the SpecialResource (so the same objects sro would write), with the
ordering sro adds taken out (node-affinity terms on ``*.sro.dev/*`` labels, owner
references to a SpecialResource that does not exist), posted with a bounded number of
requests in flight, and timed until every pod they make is Ready (or Succeeded, for
run-to-completion pods; a driver whose image builds before it prints its ready line, at
the end of its build, ``pod_logs.BUILT_AT``). What is left is pod creation, scheduling,
start-up and the drivers' build: the time any operator needs at least.

The ordering sets a second floor, the chain: a node walks its states one after another,
so it cannot finish before the sum of its states' pod start-up times along the longest
``after`` path. ``converge_pods.chain_seconds`` sums them from a run of one node's objects alone
(``one_node``) on the idle cluster, before the floor: each state's pod there, first seen
to done, is its start-up time. It leaves out the controllers' reaction to each step (a
DaemonSet controller seeing a new node label), so the true chain is longer.
"""

from __future__ import annotations

import asyncio
import copy
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from simcluster import kube

JSON = dict[str, Any]
ORDERING = ".sro.dev/"
WORKLOADS = ("DaemonSet", "Deployment", "StatefulSet", "ReplicaSet", "Job")


def rendered_objects(*, sro: Path, recipe: Path, sr_file: Path, kubeconfig: Path) -> list[JSON]:
    """What ``sro render --live`` prints for ``sr_file``: every object sro would write."""
    proc = subprocess.run(
        [str(sro), "render", "--recipe", str(recipe), "--sr", str(sr_file), "--live"],
        env={"KUBECONFIG": str(kubeconfig), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"sro render failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return [doc for doc in yaml.safe_load_all(proc.stdout) if doc]


def pod_spec(obj: Mapping[str, Any]) -> JSON | None:
    """The pod spec an object runs (a Pod's own, a workload's template), or None."""
    if obj.get("kind") == "Pod":
        return obj.get("spec")
    if obj.get("kind") in WORKLOADS:
        return obj.get("spec", {}).get("template", {}).get("spec")  # type: ignore[no-any-return]
    return None


def without_ordering(obj: Mapping[str, Any]) -> JSON:
    """``obj`` with what sro adds to order states taken out."""
    out: JSON = copy.deepcopy(dict(obj))
    out.get("metadata", {}).pop("ownerReferences", None)
    spec = pod_spec(out)
    if spec is None:
        return out
    affinity = spec.get("affinity") or {}
    node = affinity.get("nodeAffinity") or {}
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = []
    for term in required.get("nodeSelectorTerms") or []:
        kept = [e for e in term.get("matchExpressions") or [] if ORDERING not in str(e.get("key", ""))]
        if kept or term.get("matchFields"):
            terms.append({**term, "matchExpressions": kept})
    if terms:
        required["nodeSelectorTerms"] = terms
    else:
        node.pop("requiredDuringSchedulingIgnoredDuringExecution", None)
        if not node:
            affinity.pop("nodeAffinity", None)
        if not affinity:
            spec.pop("affinity", None)
    return out


HOSTNAME = "kubernetes.io/hostname"


def one_node(objects: Iterable[Mapping[str, Any]], *, node: str) -> list[JSON]:
    """``objects`` as they run on ``node`` alone: its own per-node pods only, and every
    DaemonSet selecting that node's hostname as well."""
    out: list[JSON] = []
    for obj in objects:
        kind = obj.get("kind")
        if kind == "Pod" and (obj.get("spec") or {}).get("nodeName") not in (None, node):
            continue
        one = copy.deepcopy(dict(obj))
        if kind == "DaemonSet":
            spec = pod_spec(one)
            if spec is not None:
                spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), HOSTNAME: node}
        out.append(one)
    return out


def _matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def expected_pods(objects: Iterable[Mapping[str, Any]], node_labels: Sequence[Mapping[str, str]]) -> int:
    """How many pods ``objects`` make on nodes labelled ``node_labels``: one per Pod, one
    per matching node per DaemonSet, ``replicas`` per Deployment (DaemonSets and Pods here
    carry only nodeSelector placement once the ordering is out)."""
    total = 0
    for obj in objects:
        kind = obj.get("kind")
        if kind == "Pod":
            total += 1
        elif kind == "DaemonSet":
            selector = (pod_spec(obj) or {}).get("nodeSelector") or {}
            total += sum(1 for labels in node_labels if _matches(selector, labels))
        elif kind in ("Deployment", "StatefulSet", "ReplicaSet"):
            total += int(obj.get("spec", {}).get("replicas", 1))
    return total


@dataclass
class Resources:
    """Where to POST each kind: (apiVersion, kind) → (plural, namespaced), from discovery."""

    found: dict[tuple[str, str], tuple[str, bool]] = field(default_factory=dict)

    async def learn(self, client: kube.Kube, api_versions: Iterable[str]) -> None:
        for api_version in sorted(set(api_versions)):
            path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
            listing = await client.get(path)
            for res in listing.get("resources", []):
                if "/" not in res["name"]:
                    self.found[(api_version, res["kind"])] = (res["name"], bool(res["namespaced"]))

    def collection(self, obj: Mapping[str, Any]) -> str:
        api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
        plural, namespaced = self.found[(api_version, kind)]
        base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        if namespaced:
            return f"{base}/namespaces/{obj['metadata']['namespace']}/{plural}"
        return f"{base}/{plural}"


async def post_all(client: kube.Kube, objects: Sequence[JSON], *, concurrency: int = 32) -> int:
    """POST every object, ``concurrency`` at a time, after their namespaces. A POST refused
    because what it refers to does not exist yet (a ServiceAccount, the namespace's
    default account) is tried again shortly: the floor gives the server no order but
    still ends with every object. Returns the number of POSTs sent."""
    resources = Resources()
    await resources.learn(client, (str(o["apiVersion"]) for o in objects))
    sent = 0
    # sro creates the operand namespace itself; so does the floor, first.
    for namespace in sorted(
        {str(o["metadata"]["namespace"]) for o in objects if o["metadata"].get("namespace")}
    ):
        sent += 1
        try:
            await client.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
        except kube.ApiError as exc:
            if exc.status != 409:
                raise
    gate = asyncio.Semaphore(concurrency)

    async def one(obj: JSON) -> None:
        nonlocal sent
        deadline = time.monotonic() + 60
        while True:
            async with gate:
                sent += 1
                try:
                    await client.create(resources.collection(obj), obj)
                    return
                except kube.ApiError as exc:
                    if exc.status == 409:
                        return
                    if exc.status not in (403, 404) or time.monotonic() > deadline:
                        raise
            await asyncio.sleep(0.1)

    await asyncio.gather(*(one(o) for o in objects))
    return sent


LABEL_PREFIX = "floor.sro.dev"
"""The labelled floor's node labels: no workload selects on them, sro never reads them."""


def label_batches(after: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """The fewest node writes the contract asks of any operator on each node: a state's
    label can go out only once the states it comes after are complete there, so a node
    needs one write per step of its longest chain. States as deep in ``after`` (each
    state's predecessors) share a write; ``complete`` joins the last."""
    depth: dict[str, int] = {}

    def of(state: str) -> int:
        if state not in depth:
            depth[state] = 1 + max((of(a) for a in after[state]), default=-1)
        return depth[state]

    batches: list[list[str]] = [[] for _ in range(1 + max((of(s) for s in after), default=-1))]
    for state in after:
        batches[of(state)].append(state)
    if batches:
        batches[-1].append("complete")
    return batches


def node_writes(after: Mapping[str, Sequence[str]], *, sr: Mapping[str, Any]) -> int:
    """The fewest writes the contract asks of any operator on each selected node: its label
    batches (``label_batches``), and one more when the SpecialResource has taints. Those go
    on a node as it is selected, to keep other workloads off it while its states run; the
    first label can go out only once the first state is done there, so no patch serves both."""
    return len(label_batches(after)) + (1 if (sr.get("spec") or {}).get("taints") else 0)


async def label_all(
    client: kube.Kube,
    nodes: Sequence[str],
    batches: Sequence[Sequence[str]],
    *,
    concurrency: int = 32,
    over: float = 0.0,
) -> int:
    """One JSON merge patch per node and batch of labels (``label_batches``), each label
    ``<LABEL_PREFIX>/<label>: ready``, batch after batch over every node, ``concurrency``
    at a time: the node writes the contract asks of any operator that records each state
    on each node, with no order between them. With ``over`` (seconds) they are spread
    evenly over that long, as an operator's come while nodes move through their states,
    not all at the start. Returns the patches sent."""
    gate = asyncio.Semaphore(concurrency)
    total = len(nodes) * len(batches)
    start = time.monotonic()

    async def one(i: int, node: str, batch: Sequence[str]) -> None:
        if over > 0:
            await asyncio.sleep(max(0.0, start + over * i / total - time.monotonic()))
        async with gate:
            await client.patch(
                f"/api/v1/nodes/{node}",
                {"metadata": {"labels": {f"{LABEL_PREFIX}/{label}": "ready" for label in batch}}},
            )

    pairs = [(node, batch) for batch in batches for node in nodes]
    await asyncio.gather(*(one(i, node, batch) for i, (node, batch) in enumerate(pairs)))
    return total


async def unlabel_all(
    client: kube.Kube, nodes: Sequence[str], labels: Sequence[str], *, concurrency: int = 32
) -> None:
    """Take ``label_all``'s labels off again, one patch per node."""
    gate = asyncio.Semaphore(concurrency)
    gone: dict[str, None] = {f"{LABEL_PREFIX}/{label}": None for label in labels}

    async def one(node: str) -> None:
        async with gate:
            await client.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": gone}})

    await asyncio.gather(*(one(node) for node in nodes))
