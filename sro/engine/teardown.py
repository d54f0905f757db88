"""Taking a SpecialResource's footprint away: ``Removed``, deletion, and the finalizer.

Owner references let the garbage collector remove objects, but not node labels, node
annotations or taints, and not while sro wants to report progress. So the finalizer
``sro.dev/cleanup`` (added on first sight) holds a deleted SpecialResource until the
planner's teardown reports nothing left: no owned object (not even one still being
deleted) and no node carrying anything of it. ``managementState: Removed`` runs the same
teardown but keeps the SpecialResource and reports progress in its status.

Finalizer edits are merge patches of the whole list with the object's ``resourceVersion``,
so a concurrent edit of the list by someone else ends in 409 and a retry, never a loss.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog

from sro import errors
from sro.engine import node_writes, ports, writes
from sro.model import specialresource as sr_model
from sro.plan import inputs, planner
from sro.plan import observed as observed_
from sro.status import summary
from sro.status import writer as writer_

log = structlog.get_logger(__name__)

POLL = 2.0
"""Seconds between teardown passes while objects are still going away (a namespace takes a
few seconds); watches also wake the engine, this is the floor."""


@dataclass(frozen=True, kw_only=True)
class Context:
    sr: sr_model.SpecialResource
    previous: Mapping[str, Any]
    reader: ports.Reader
    writer: ports.Writer
    status: writer_.StatusWriter


def _path(name: str) -> str:
    return f"/apis/{sr_model.GROUP}/{sr_model.VERSION}/{sr_model.PLURAL}/{name}"


async def _set_finalizers(writer: ports.Writer, sr: sr_model.SpecialResource, finalizers: list[str]) -> None:
    version = str((sr.body.get("metadata") or {}).get("resourceVersion", ""))
    meta: dict[str, Any] = {"finalizers": finalizers or None}
    if version:
        meta["resourceVersion"] = version
    await writer.request(
        "PATCH", _path(sr.name), body={"metadata": meta}, content_type="application/merge-patch+json"
    )


async def add_finalizer(writer: ports.Writer, sr: sr_model.SpecialResource) -> None:
    await _set_finalizers(writer, sr, [*sr.finalizers, sr_model.FINALIZER])
    log.info("finalizer added", sr=sr.name)


async def _run(ctx: Context, *, now: datetime) -> tuple[planner.Plan, bool]:
    """One teardown pass; True when nothing of the SpecialResource is left."""
    sr = ctx.sr
    nodes = ctx.reader.nodes()
    namespace_pods = ctx.reader.pods(sr.spec.namespace)
    objects = {
        **inputs.live_objects(ctx.reader.owned(sr.name)),
        **inputs.pod_objects(inputs.owned_pods(namespace_pods, sr_name=sr.name)),
    }
    seen = observed_.Observed(
        generation=sr.generation,
        nodes={},
        departed=inputs.carrying(sr.name, nodes, inputs.sr_taints(sr)),
        objects=objects,
        pods=inputs.relevant_pods(namespace_pods, owned=objects, sr_name=sr.name),
        previous_status=ctx.previous,
        taints=inputs.sr_taints(sr),
    )
    planned = planner.plan_teardown(sr_name=sr.name, seen=seen, generation=sr.generation, now=now)
    await writes.delete_objects(ctx.writer, planned.delete, sr_name=sr.name)
    by_name = {n.name: n for n in nodes}
    pending_nodes = 0
    for change in planned.node_labels:
        node = by_name.get(change.node)
        patch = node_writes.node_patch(node, change, sr_name=sr.name) if node is not None else None
        if patch is None:
            continue
        pending_nodes += 1
        try:
            await node_writes.send(ctx.writer, change.node, patch)
        except errors.NotFound:
            pending_nodes -= 1
        except errors.SroError as exc:
            log.info("node not cleaned yet", sr=sr.name, node=change.node, error=str(exc))
    # Done when the caches show no object and no node needed a patch this pass.
    done = not objects and pending_nodes == 0
    return planned, done


async def remove(ctx: Context, *, now: datetime) -> float | None:
    """``managementState: Removed``: delete everything, keep the SpecialResource, say so."""
    planned, done = await _run(ctx, now=now)
    remaining = 0 if done else max(len(planned.delete) + len(planned.node_labels), 1)
    status = summary.status_for_management(
        ctx.previous, state="Removed", generation=ctx.sr.generation, now=now, remaining=remaining
    )
    written = await ctx.status.write_status(name=ctx.sr.name, current=ctx.previous, status=status)
    if written and planned.events:
        await ctx.status.emit(sr_name=ctx.sr.name, sr_uid=ctx.sr.uid, events=planned.events)
    return None if done else POLL


async def finalize(ctx: Context, *, now: datetime) -> float | None:
    """A deleted SpecialResource: tear down, then let it go by dropping the finalizer."""
    if sr_model.FINALIZER not in ctx.sr.finalizers:
        return None
    _, done = await _run(ctx, now=now)
    if not done:
        return POLL
    await _set_finalizers(ctx.writer, ctx.sr, [f for f in ctx.sr.finalizers if f != sr_model.FINALIZER])
    log.info("finalizer removed", sr=ctx.sr.name)
    return None
