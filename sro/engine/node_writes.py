"""Carrying out the planner's node changes: one merge patch per node, sent.

The patches themselves are built by the pure ``sro.plan.node_patches`` (labels by merge
patch on sro's own keys only; taints with the node's resourceVersion and a record of which
are sro's), so nothing here can clobber what the kubelet, NFD or an administrator set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import structlog

from sro import errors
from sro.engine import ports, waves
from sro.model import bodies, views
from sro.plan import lifecycle, node_patches
from sro.plan import observed as observed_

log = structlog.get_logger(__name__)


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
) -> Written:
    """Send the planned node changes, one patch per node and up to ``limit`` nodes at once.

    A node that went away meanwhile is no failure. A change whose node shows it done
    already sends nothing.
    """
    by_name = {n.name: n for n in nodes}
    failures: list[tuple[str, errors.SroError]] = []
    shown: dict[str, Mapping[str, str]] = {}
    answers: dict[str, observed_.NodeAnswer] = {}
    own = lifecycle.label_prefix(sr_name)

    async def send(change: node_patches.NodeChange) -> None:
        node = by_name.get(change.node)
        patch = node_patches.for_change(node, change, sr_name=sr_name) if node is not None else None
        if patch is None:
            if node is not None:
                shown[change.node] = node.labels
            return
        try:
            answer = await writer.patch_node(change.node, patch)
            labels = (answer.get("metadata") or {}).get("labels")
            shown[change.node] = labels = labels if isinstance(labels, Mapping) else {}
            answers[change.node] = observed_.NodeAnswer(
                version=bodies.version_of(answer),
                labels={k: v for k, v in labels.items() if k.startswith(own)},
            )
            log.debug("node patched", sr=sr_name, node=change.node, patch=patch)
        except errors.NotFound:
            return
        except errors.SroError as exc:
            failures.append((change.node, exc))

    await waves.bounded(changes, send, limit=limit)
    return Written(failures=tuple(sorted(failures, key=lambda f: f[0])), labels=shown, answers=answers)
