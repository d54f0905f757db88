"""Node label and taint patches: only ever what sro put there.

Nodes belong to their kubelet, to NFD and to administrators; sro adds a few labels
(``<sr>.sro.dev/<state>``, ``<sr>.sro.dev/complete``) and, for hard partitioning, the
SpecialResource's taints. Both kinds of write are built so they cannot clobber anyone:

* labels go by JSON merge patch on ``metadata.labels`` naming only sro's keys (``null``
  removes one), so a concurrent label change by someone else is untouched;
* taints are a list, which a merge patch replaces whole, so the patch carries the node's
  ``resourceVersion`` (a concurrent change ends in 409 and a retry from fresh state), and
  the taints sro added are recorded in the node annotation ``sro.dev/taints.<sr>``: a
  taint that was already there before sro wanted it (an administrator's) is never
  recorded, so it is never removed.

The patch builders are pure; ``send`` sends one.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import structlog

from sro import errors
from sro.model import views
from sro.reconcile import lifecycle

TAINTS_ANNOTATION_PREFIX = "sro.dev/taints."

log = structlog.get_logger(__name__)


class Requester(Protocol):
    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Any: ...


def taints_annotation(sr_name: str) -> str:
    """The node annotation listing the taints SpecialResource ``sr_name`` put on the node."""
    return TAINTS_ANNOTATION_PREFIX + sr_name


def owned_taints(node: views.NodeView, sr_name: str) -> tuple[views.Taint, ...]:
    """The taints sro recorded as its own on ``node`` for ``sr_name`` (unreadable: none)."""
    raw = node.annotations.get(taints_annotation(sr_name), "")
    if not raw:
        return ()
    try:
        items = json.loads(raw)
    except ValueError:
        return ()
    if not isinstance(items, list):
        return ()
    return tuple(
        views.Taint(
            key=str(t.get("key", "")), value=str(t.get("value", "") or ""), effect=str(t.get("effect", ""))
        )
        for t in items
        if isinstance(t, Mapping)
    )


def label_patch(node: views.NodeView, changes: Mapping[str, str | None]) -> dict[str, Any] | None:
    """The merge patch setting (value) or removing (None) labels, or None if already so."""
    effective = {k: v for k, v in changes.items() if node.labels.get(k) != v}
    if not effective:
        return None
    return {"metadata": {"labels": effective}}


def taint_patch(
    node: views.NodeView, *, sr_name: str, wanted: Iterable[views.Taint]
) -> dict[str, Any] | None:
    """The patch that makes ``node`` carry exactly ``wanted`` of sro's taints for ``sr_name``.

    Taints sro recorded and no longer wants are removed; wanted taints missing from the
    node are added and recorded; a wanted taint already present but not recorded was
    someone else's first and stays theirs. None when nothing would change.
    """
    wanted_set = list(dict.fromkeys(wanted))
    owned = set(owned_taints(node, sr_name))
    current = list(node.taints)
    remove = {t for t in owned if t not in wanted_set}
    add = [t for t in wanted_set if t not in current]
    keep_owned = {t for t in owned if t in wanted_set and t in current}
    new_owned = sorted(keep_owned | set(add), key=lambda t: (t.key, t.effect, t.value))
    if not remove and not add and set(new_owned) == owned:
        return None
    taints = [t for t in current if t not in remove] + add
    key = taints_annotation(sr_name)
    record = json.dumps([t.to_body() for t in new_owned], sort_keys=True) if new_owned else None
    patch: dict[str, Any] = {
        "metadata": {"resourceVersion": node.resource_version, "annotations": {key: record}},
        "spec": {"taints": [t.to_body() for t in taints]},
    }
    if not node.resource_version:
        del patch["metadata"]["resourceVersion"]
    return patch


def node_patch(node: views.NodeView, change: lifecycle.NodeChange, *, sr_name: str) -> dict[str, Any] | None:
    """The one merge patch carrying out the planner's ``change`` on ``node`` (None: nothing to do).

    Labels and annotations are taken as planned, minus what the node already shows;
    ``change.taints`` (the SpecialResource's taints the node should carry, None to leave
    them) goes through ``taint_patch``, which knows which taints are sro's to remove.
    """
    patch: dict[str, Any] = {"metadata": {}}
    if change.taints is not None:
        patch = taint_patch(node, sr_name=sr_name, wanted=change.taints) or patch
    labels = {k: v for k, v in change.labels.items() if node.labels.get(k) != v}
    annotations = {k: v for k, v in change.annotations.items() if node.annotations.get(k) != v}
    if labels:
        patch["metadata"]["labels"] = labels
    if annotations:
        patch["metadata"].setdefault("annotations", {}).update(annotations)
    if not patch["metadata"] and "spec" not in patch:
        return None
    return patch


async def send(api: Requester, name: str, patch: Mapping[str, Any]) -> None:
    """Send one node merge patch (a stale ``resourceVersion`` in it ends in ``Conflict``)."""
    await api.request(
        "PATCH", f"/api/v1/nodes/{name}", body=patch, content_type="application/merge-patch+json"
    )
    log.debug("node patched", node=name, patch=patch)


async def carry_out(
    api: Requester,
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
