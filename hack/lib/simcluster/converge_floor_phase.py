"""The floor's phase of ``hack/bench converge``: what the control plane allows without sro.

The recipe's objects as ``sro render --live`` prints them, ordering taken out
(``converge_floor``), first for one node alone (the chain of states: the latency floor
of sro's order), then for every node at once, timed to every pod done and removed again;
with ``labelled``, once more with the contract's node label writes sent besides (the
*labelled floor*). Each timed window can carry kube-apiserver's CPU profile
(``apiserver_profile``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from simcluster import converge_floor, converge_pods, daemons, kube, layout, pprof


def apiserver_profile(
    client: kube.Kube, *, out: Path | None, name: str
) -> contextlib.AbstractAsyncContextManager[object]:
    """kube-apiserver's CPU profile of a phase into ``out`` (``pprof.Profiler``); with no
    ``out``, nothing."""
    return pprof.Profiler(client, out=out, name=name) if out else contextlib.nullcontext()


async def floor(
    client: kube.Kube,
    run: layout.RunDir,
    sr_file: Path,
    *,
    sro: Path,
    recipe: Path,
    after: Mapping[str, Sequence[str]],
    within: float,
    profile: Path | None = None,
    labelled: bool = False,
) -> dict[str, Any]:
    """The floor of ``recipe`` as ``sro`` renders it for the SpecialResource in ``sr_file``
    (``after``: each state's predecessors): the chain on one node alone, then every object
    posted at once. With ``labelled`` the floor runs a second time with every node given
    its state labels and ``complete`` besides, in the fewest patches the order of states
    allows (``converge_floor.label_batches``), spread over as long as the first took (the
    *labelled floor*): what the contract's node writes alone add to the control plane's
    work."""
    objects = [
        converge_floor.without_ordering(o)
        for o in converge_floor.rendered_objects(
            sro=sro, recipe=recipe, sr_file=sr_file, kubeconfig=run.kubeconfig
        )
    ]
    listed = await client.get("/api/v1/nodes", request_seconds=120)
    labels = [n["metadata"].get("labels") or {} for n in listed["items"]]
    # The chain first, on the idle cluster: one node's objects alone.
    first = next(n for n in labels if converge_floor.expected_pods(objects, [n]))
    node = first[converge_floor.HOSTNAME]
    alone = (
        await _posted(client, run, converge_floor.one_node(objects, node=node), [first], within=within)
    ).times
    chain = converge_pods.chain_seconds(alone.fastest, after)
    plain = await _posted(
        client,
        run,
        objects,
        labels,
        within=within,
        during=apiserver_profile(client, out=profile, name="floor"),
    )
    curve = plain.times.curve
    seconds = curve[-1][0]
    print(
        f"floor: {len(objects)} objects ({plain.posts} POSTs), {plain.expected} pods done in {seconds:.1f}s; "
        f"chain of states on {node} alone {chain:.1f}s",
        flush=True,
    )
    figures: dict[str, Any] = {
        "objects": len(objects),
        "posts": plain.posts,
        "pods": plain.expected,
        "seconds": seconds,
        "curve": curve,
        "chain_seconds": chain,
        "chain_pod_seconds": alone.fastest,
        "control_plane_cpu": plain.cpu,
    }
    if labelled:
        nodes = [str(n["metadata"]["name"]) for n in listed["items"]]
        both = await _posted(
            client,
            run,
            objects,
            labels,
            within=within,
            node_labels=(nodes, converge_floor.label_batches(after)),
            spread=seconds,
        )
        done = max(both.times.curve[-1][0], both.labelled_seconds)
        figures["labelled"] = {
            "seconds": done,
            "pods_seconds": both.times.curve[-1][0],
            "label_patches": both.patches,
            "control_plane_cpu": both.cpu,
        }
        print(
            f"labelled floor: the same and {both.patches} node label patches spread over "
            f"{seconds:.0f}s, all done in {done:.1f}s (labels {both.labelled_seconds:.1f}s)",
            flush=True,
        )
    return figures


@dataclasses.dataclass(frozen=True)
class Posted:
    """What ``_posted`` timed: the pods, the POSTs sent, the pods expected, the CPU each
    control-plane process spent until the last pod was done, and the node label patches
    sent besides (with when the last was answered, in seconds from the start)."""

    times: converge_pods.PodTimes
    posts: int
    expected: int
    cpu: dict[str, float]
    patches: int = 0
    labelled_seconds: float = 0.0


async def _posted(
    client: kube.Kube,
    run: layout.RunDir,
    objects: list[dict[str, Any]],
    labels: list[dict[str, str]],
    *,
    within: float,
    during: contextlib.AbstractAsyncContextManager[object] | None = None,
    node_labels: tuple[list[str], list[list[str]]] | None = None,
    spread: float = 0.0,
) -> Posted:
    """Post ``objects`` at once, time their pods (on nodes labelled ``labels``) to done,
    then remove it all (``during`` is entered for exactly the timed window). With
    ``node_labels`` (nodes, batches of label names) every node gets each batch in its own
    patch meanwhile, spread over ``spread`` seconds (``converge_floor.label_all``), and the CPU
    is counted until both are done."""
    expected = converge_floor.expected_pods(objects, labels)
    namespace = next(str(o["metadata"]["namespace"]) for o in objects if o["metadata"].get("namespace"))
    async with during or contextlib.nullcontext():
        started = time.monotonic()
        cpu0 = daemons.cpu_by_name(run.pids)
        waiter = asyncio.create_task(
            converge_pods.wait_pods(
                client, namespace=namespace, expected=expected, started=started, within=within
            )
        )

        async def labelled() -> tuple[int, float]:
            """The label patches sent, and when the last was answered."""
            if node_labels is None:
                return 0, 0.0
            sent = await converge_floor.label_all(client, *node_labels, over=spread)
            return sent, time.monotonic() - started

        labelling = asyncio.create_task(labelled())
        posts = await converge_floor.post_all(client, objects)
        patches, labelled_seconds = await labelling
        times = await waiter
        cpu = daemons.cpu_by_name(run.pids, cpu0)
    # Remove it all before anything else runs: the namespace, then the cluster-scoped objects.
    resources = converge_floor.Resources()
    await resources.learn(client, (str(o["apiVersion"]) for o in objects))
    await client.delete(f"/api/v1/namespaces/{namespace}")
    for obj in objects:
        if "namespace" not in obj["metadata"]:
            await client.delete(f"{resources.collection(obj)}/{obj['metadata']['name']}")
    while True:
        try:
            await client.get(f"/api/v1/namespaces/{namespace}")
        except kube.ApiError as exc:
            if exc.status == 404:
                break
            raise
        await asyncio.sleep(0.5)
    if node_labels is not None:
        nodes, batches = node_labels
        await converge_floor.unlabel_all(client, nodes, [label for batch in batches for label in batch])
    return Posted(times, posts, expected, cpu, patches=patches, labelled_seconds=labelled_seconds)
