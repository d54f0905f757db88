"""Node writes against the real API server: what a patch answers, a patch that meets a
conflict, and what waits on a node's labels.

Nodes are written by kubelets and administrators too, so sro's patches meet their
changes. Covers: a label patch answers with the node's metadata only (what
``node_writes`` reads: labels and resourceVersion, no spec or status); a taint patch
guarded by a stale resourceVersion meets a conflict, is built again from a fresh read
and goes through keeping the other taint, while a cordon built from the same stale view
is reported, not retried; ``carry_out(then=...)`` follows up each node as soon as its own
patch answered, with the labels the answer shows.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from runtime_api_common import api_settings

from sro import errors
from sro.apply import ssa
from sro.engine import node_writes
from sro.kube import discovery, http
from sro.model import views
from sro.plan import lifecycle, node_patches

pytestmark = pytest.mark.integration


async def test_a_node_patch_answers_with_the_nodes_metadata_only(cluster: Any) -> None:
    """What a label patch returns is what ``node_writes`` reads (labels, resourceVersion),
    without the node's spec and status."""
    async with await http.Api.connect(api_settings(cluster)) as api:
        writer = ssa.Writer(api=api, discovery=discovery.Discovery(api))
        listed = await api.request("GET", "/api/v1/nodes", params={"limit": "1"})
        name = listed["items"][0]["metadata"]["name"]
        key = f"test.sro.dev/patched-{uuid.uuid4().hex[:8]}"
        try:
            answer = await writer.patch_node(name, {"metadata": {"labels": {key: "yes"}}})
            assert answer["kind"] == "PartialObjectMetadata"
            assert "status" not in answer and "spec" not in answer
            assert answer["metadata"]["name"] == name and answer["metadata"]["labels"][key] == "yes"
            assert writer.written_version("v1", "Node") == int(answer["metadata"]["resourceVersion"])
        finally:
            removed = await writer.patch_node(name, {"metadata": {"labels": {key: None}}})
        assert key not in removed["metadata"]["labels"]


async def test_a_taint_patch_that_meets_a_status_report_is_built_again_and_a_cordon_is_not(
    cluster: Any,
) -> None:
    """A node seen a moment ago has changed since (a kubelet's status report, an
    administrator's taint): sro's taint patch, guarded by the resourceVersion it saw, meets
    a conflict, is built again from a fresh read and goes through, keeping the other
    taint; a cordon built from the same stale view is reported, not retried."""
    async with await http.Api.connect(api_settings(cluster)) as api:
        writer = ssa.Writer(api=api, discovery=discovery.Discovery(api))
        listed = await api.request("GET", "/api/v1/nodes", params={"limit": "1"})
        name = listed["items"][0]["metadata"]["name"]
        stale = views.NodeView.from_body(await api.request("GET", f"/api/v1/nodes/{name}"))
        theirs = {"key": f"admin.example.com/{uuid.uuid4().hex[:8]}", "effect": "NoSchedule"}
        ours = views.Taint(key="test.sro.dev/gpu", value="present", effect="NoSchedule")
        await api.request(  # meanwhile, someone else's write moves the resourceVersion
            "PATCH",
            f"/api/v1/nodes/{name}",
            body={"spec": {"taints": [*(t.to_body() for t in stale.taints), theirs]}},
            content_type=http.MERGE_PATCH,
        )
        try:
            done = await node_writes.carry_out(
                writer,
                [node_patches.NodeChange(node=name, taints=(ours,))],
                sr_name="conflicted",
                nodes=[stale],
            )
            assert done.failures == ()
            now = await api.request("GET", f"/api/v1/nodes/{name}")
            keys = [t["key"] for t in now["spec"].get("taints") or []]
            assert ours.key in keys and theirs["key"] in keys, "sro's taint added, theirs kept"
            assert ours.key in now["metadata"]["annotations"][node_patches.taints_annotation("conflicted")]

            cordon = await node_writes.carry_out(
                writer,
                [node_patches.NodeChange(node=name, unschedulable=True)],
                sr_name="conflicted",
                nodes=[stale],
            )
            assert [n for n, _ in cordon.failures] == [name]
            assert isinstance(cordon.failures[0][1], errors.Conflict)
            assert not (await api.request("GET", f"/api/v1/nodes/{name}"))["spec"].get("unschedulable")
        finally:
            fresh = views.NodeView.from_body(await api.request("GET", f"/api/v1/nodes/{name}"))
            await writer.patch_node(
                name,
                {
                    "metadata": {
                        "resourceVersion": fresh.resource_version,
                        "annotations": {node_patches.taints_annotation("conflicted"): None},
                    },
                    "spec": {
                        "taints": [
                            t.to_body() for t in fresh.taints if t.key not in (ours.key, theirs["key"])
                        ]
                    },
                },
            )


async def test_what_waits_on_a_nodes_labels_runs_once_that_node_shows_them_not_after_every_node(
    cluster: Any,
) -> None:
    """``carry_out(then=...)``: each node's follow-up runs as soon as its own patch answered,
    with the labels the answer shows, before the next node's patch (one at a time here);
    a node that needed no patch is followed up with its cached labels, and a node that is
    gone is not followed up at all."""
    async with await http.Api.connect(api_settings(cluster)) as api:
        writer = ssa.Writer(api=api, discovery=discovery.Discovery(api))
        listed = await api.request("GET", "/api/v1/nodes", params={"limit": "3"})
        names = sorted(item["metadata"]["name"] for item in listed["items"])
        assert len(names) == 3
        sr = f"follow-{uuid.uuid4().hex[:6]}"
        label = lifecycle.state_label(sr, "state-a")
        seen = {n: views.NodeView.from_body(await api.request("GET", f"/api/v1/nodes/{n}")) for n in names}
        done_already = names[2]
        await api.request(
            "PATCH", f"/api/v1/nodes/{done_already}", body={"metadata": {"labels": {label: "ready"}}},
            content_type=http.MERGE_PATCH,
        )  # fmt: skip
        seen[done_already] = views.NodeView.from_body(
            await api.request("GET", f"/api/v1/nodes/{done_already}")
        )
        followed: list[tuple[str, str | None, str | None]] = []

        async def then(node: str, labels: Any) -> None:
            later = [n for n in names[:2] if n > node]
            other = (await api.request("GET", f"/api/v1/nodes/{later[0]}"))["metadata"] if later else {}
            followed.append(
                (node, labels.get(label), (other.get("labels") or {}).get(label) if later else None)
            )

        mark = lifecycle.kernel_annotation(sr)
        changes = [
            node_patches.NodeChange(
                node=n, labels={label: "ready"}, annotations={mark: "g1"} if n == names[0] else {}
            )
            for n in (*names, "no-such-node")
        ]
        try:
            written = await node_writes.carry_out(
                writer, changes, sr_name=sr, nodes=[*seen.values()], limit=1, then=then
            )
            assert written.failures == ()
            assert sorted(n for n, _, _ in followed) == names, "every node shown once, the gone one never"
            assert all(value == "ready" for _, value, _ in followed), "each with the labels it shows"
            first = next(f for f in followed if f[0] == names[0])
            assert first[2] is None, "followed up before the next node's patch was sent"
            # What each answer says of the SpecialResource's own marks: every one, None where
            # the node has none; a patch that did not cordon or uncordon says nothing of it.
            answer = written.answers[names[0]]
            assert answer.annotations == {m: ("g1" if m == mark else None) for m in lifecycle.node_marks(sr)}
            assert answer.labels == {label: "ready"} and answer.unschedulable is None
            assert answer.version > int(seen[names[0]].resource_version)
            assert set(written.answers) == set(names[:2]), "one answer per patch sent"
        finally:
            for n in names:
                await api.request(
                    "PATCH", f"/api/v1/nodes/{n}",
                    body={"metadata": {"labels": {label: None}, "annotations": {mark: None}}},
                    content_type=http.MERGE_PATCH,
                )  # fmt: skip
