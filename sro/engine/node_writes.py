"""Carrying out the planner's node changes: one merge patch per node, sent.

The patches themselves are built by the pure ``node_patches`` (labels by merge patch on
sro's own keys only; taints with the node's resourceVersion and a record of which are
sro's), so nothing here can clobber what the kubelet, NFD or an administrator set.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from sro import errors
from sro.kube import http
from sro.model import views
from sro.plan import lifecycle, node_patches

log = structlog.get_logger(__name__)


def node_patch(node: views.NodeView, change: lifecycle.NodeChange, *, sr_name: str) -> dict[str, Any] | None:
    """The one merge patch carrying out the planner's ``change`` on ``node`` (None: nothing to do).

    Labels and annotations are taken as planned, minus what the node already shows;
    ``change.taints`` (the SpecialResource's taints the node should carry, None to leave
    them) goes through ``taint_patch``, which knows which taints are sro's to remove.
    """
    patch: dict[str, Any] = {"metadata": {}}
    if change.taints is not None:
        patch = node_patches.taint_patch(node, sr_name=sr_name, wanted=change.taints) or patch
    labels = {k: v for k, v in change.labels.items() if node.labels.get(k) != v}
    annotations = {k: v for k, v in change.annotations.items() if node.annotations.get(k) != v}
    if labels:
        patch["metadata"]["labels"] = labels
    if annotations:
        patch["metadata"].setdefault("annotations", {}).update(annotations)
    if not patch["metadata"] and "spec" not in patch:
        return None
    return patch


async def send(api: http.Requester, name: str, patch: Mapping[str, Any]) -> None:
    """Send one node merge patch (a stale ``resourceVersion`` in it ends in ``Conflict``)."""
    await api.request(
        "PATCH", f"/api/v1/nodes/{name}", body=patch, content_type="application/merge-patch+json"
    )
    log.debug("node patched", node=name, patch=patch)


async def carry_out(
    api: http.Requester,
    changes: Iterable[lifecycle.NodeChange],
    *,
    sr_name: str,
    nodes: Iterable[views.NodeView],
    blocked: frozenset[str] = frozenset(),
) -> tuple[tuple[str, errors.SroError], ...]:
    """Send the planned node changes; (node, error) for each that failed.

    States in ``blocked`` (left unwritten after a refusal) are never labelled ready, and
    neither is ``complete``, whatever the plan thought of them.
    """
    by_name = {n.name: n for n in nodes}
    failures: list[tuple[str, errors.SroError]] = []
    held = {lifecycle.state_label(sr_name, s) for s in blocked}
    if held:
        held.add(lifecycle.complete_label(sr_name))
    for planned in changes:
        node = by_name.get(planned.node)
        if node is None:
            continue
        change = planned
        if held:
            labels = {k: v for k, v in change.labels.items() if not (k in held and v is not None)}
            change = dataclasses.replace(change, labels=labels)
        patch = node_patch(node, change, sr_name=sr_name)
        if patch is None:
            continue
        try:
            await send(api, node.name, patch)
        except errors.NotFound:
            continue  # the node went away meanwhile
        except errors.SroError as exc:
            failures.append((node.name, exc))
    return tuple(failures)
