"""Carrying out the planner's node changes: one merge patch per node, sent.

The patches themselves are built by the pure ``sro.plan.node_patches`` (labels by merge
patch on sro's own keys only; taints with the node's resourceVersion and a record of which
are sro's), so nothing here can clobber what the kubelet, NFD or an administrator set.

A taint patch that meets a conflict (the node changed since the cache saw it: on a large
fleet, mostly a kubelet's status report) is built again from a fresh read of the node and
sent again, up to ``CONFLICT_RETRIES`` times, as client-go's ``RetryOnConflict`` does: the
builder keeps whatever else changed meanwhile, so only sro's own taints move. A cordon or
uncordon is not retried: the planner decided it from what it saw, and an administrator's
cordon made meanwhile must stand until a pass has seen it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field

import structlog

from sro import errors
from sro.engine import ports, waves
from sro.model import bodies, desired, views
from sro.plan import lifecycle, node_patches
from sro.plan import observed as observed_

log = structlog.get_logger(__name__)

CONFLICT_RETRIES = 3
"""Fresh reads and resends of a taint patch that met a conflict, before it is reported."""


@dataclass(frozen=True, kw_only=True)
class Written:
    """(node, error) for each change that failed, by node name; the labels each changed
    node shows now (its patch's answer, or the cache when it needed no patch); and what
    each patch returned (``Observed.node_answers`` of the next passes)."""

    failures: tuple[tuple[str, errors.SroError], ...]
    labels: Mapping[str, Mapping[str, str]]
    answers: Mapping[str, observed_.NodeAnswer] = field(default_factory=dict)


async def carry_out(
    writer: ports.Writer,
    changes: Iterable[node_patches.NodeChange],
    *,
    sr_name: str,
    nodes: Iterable[views.NodeView],
    limit: int = waves.DEFAULT_LIMIT,
    then: Callable[[str, Mapping[str, str]], Awaitable[None]] | None = None,
) -> Written:
    """Send the planned node changes, one patch per node and up to ``limit`` nodes at once.

    A node that went away meanwhile is no failure. A change whose node shows it done
    already sends nothing. ``then(node, labels)`` runs for each node as soon as it shows its
    change (its patch answered, or it needed none), in the node's own turn: what waits on
    one node's labels need not wait on every other node's patch.
    """
    by_name = {n.name: n for n in nodes}
    failures: list[tuple[str, errors.SroError]] = []
    shown: dict[str, Mapping[str, str]] = {}
    answers: dict[str, observed_.NodeAnswer] = {}
    own, kept = lifecycle.label_prefix(sr_name), lifecycle.node_marks(sr_name)

    async def send(change: node_patches.NodeChange) -> None:
        await change_node(change)
        if then is not None and (labels := shown.get(change.node)) is not None:
            await then(change.node, labels)  # outside change_node's error handling

    async def change_node(change: node_patches.NodeChange) -> None:
        node = by_name.get(change.node)
        patch = node_patches.for_change(node, change, sr_name=sr_name) if node is not None else None
        if patch is None:
            if node is not None:
                shown[change.node] = node.labels
            return
        retries = CONFLICT_RETRIES if change.unschedulable is None else 0
        try:
            for retry in range(retries + 1):
                try:
                    answer = await writer.patch_node(change.node, patch)
                    break
                except errors.Conflict:
                    if retry == retries:
                        raise
                fresh = views.NodeView.from_body(await writer.get(_node_ref(change.node)))
                log.debug("node changed meanwhile: patch built again", sr=sr_name, node=change.node)
                patch = node_patches.for_change(fresh, change, sr_name=sr_name)
                if patch is None:  # what it would do is done
                    shown[change.node] = fresh.labels
                    return
            meta = answer.get("metadata") or {}
            labels, annotations = meta.get("labels"), meta.get("annotations")
            shown[change.node] = labels = labels if isinstance(labels, Mapping) else {}
            annotations = annotations if isinstance(annotations, Mapping) else {}
            answers[change.node] = observed_.NodeAnswer(
                version=bodies.version_of(answer),
                labels={k: v for k, v in labels.items() if k.startswith(own)},
                annotations={k: annotations.get(k) for k in kept},
                unschedulable=change.unschedulable,
            )
            log.debug("node patched", sr=sr_name, node=change.node, patch=patch)
        except errors.NotFound:
            return
        except errors.SroError as exc:
            failures.append((change.node, exc))

    await waves.bounded(changes, send, limit=limit)
    return Written(failures=tuple(sorted(failures, key=lambda f: f[0])), labels=shown, answers=answers)


def _node_ref(name: str) -> desired.ObjectRef:
    return desired.ObjectRef(api_version="v1", kind="Node", namespace="", name=name)
