"""Taking a SpecialResource's footprint away: ``Removed``, deletion, and the finalizer.

Owner references let the garbage collector remove objects, but not node labels, node
annotations or taints, and not while sro wants to report progress. So the finalizer
``sro.dev/cleanup`` (added on first sight) holds a deleted SpecialResource until the
planner's teardown (``planner.plan_teardown``) says nothing is left: no owned object (not
even one still being deleted) and no node carrying anything of it. ``managementState:
Removed`` runs the same teardown but keeps the SpecialResource and writes the plan's
status. Everything decided here is the plan's; this module only carries it out.

Finalizer edits replace the whole list guarded by the object's ``resourceVersion``, so a
concurrent edit of the list by someone else ends in 409 and a retry, never a loss.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog

from sro.engine import node_writes, ports, status_writes, writes
from sro.model import desired
from sro.model import specialresource as sr_model
from sro.plan import actions, inputs, planner
from sro.status import events

log = structlog.get_logger(__name__)


@dataclass(frozen=True, kw_only=True)
class Context:
    sr: sr_model.SpecialResource
    previous: Mapping[str, Any]
    reader: ports.Reader
    writer: ports.Writer
    status: status_writes.StatusWriter


def _ref(sr: sr_model.SpecialResource) -> desired.ObjectRef:
    return desired.ObjectRef(api_version=sr_model.API_VERSION, kind=sr_model.KIND, namespace="", name=sr.name)


async def set_finalizers(writer: ports.Writer, sr: sr_model.SpecialResource, finalizers: list[str]) -> None:
    version = str((sr.body.get("metadata") or {}).get("resourceVersion", ""))
    await writer.set_finalizers(_ref(sr), finalizers, resource_version=version)


async def add_finalizer(writer: ports.Writer, sr: sr_model.SpecialResource) -> None:
    await set_finalizers(writer, sr, [*sr.finalizers, sr_model.FINALIZER])
    log.info("finalizer added", sr=sr.name)


async def _run(ctx: Context, *, now: datetime) -> actions.Plan:
    """One teardown pass: plan it from the caches, send its deletions and node changes."""
    sr = ctx.sr
    nodes = ctx.reader.nodes()
    owned = ctx.reader.owned(sr.name)
    seen = inputs.observe_teardown(
        sr,
        owned=owned,
        namespace_pods=ctx.reader.pods(sr.spec.namespace),
        nodes=nodes,
        previous=ctx.previous,
        lagging=ctx.reader.lagging(inputs.watched_kinds((), owned)),
    )
    planned = planner.plan_teardown(sr_name=sr.name, seen=seen, generation=sr.generation, now=now)
    report = await writes.delete_objects(ctx.writer, planned.delete, sr_name=sr.name)
    removed = events.objects_removed(planned.removed, absent=report.absent)
    planned = dataclasses.replace(planned, events=(*planned.events, *removed))
    written = await node_writes.carry_out(ctx.writer, planned.node_labels, sr_name=sr.name, nodes=nodes)
    for node, error in written.failures:
        log.info("node not cleaned yet", sr=sr.name, node=node, error=str(error))
    return planned


async def remove(ctx: Context, *, now: datetime) -> float | None:
    """``managementState: Removed``: delete everything, keep the SpecialResource, say so."""
    planned = await _run(ctx, now=now)
    await ctx.status.record(
        name=ctx.sr.name, uid=ctx.sr.uid, current=ctx.previous, status=planned.status, events_=planned.events
    )
    return planned.requeue_after


async def finalize(ctx: Context, *, now: datetime) -> float | None:
    """A deleted SpecialResource: tear down, then let it go by dropping the finalizer."""
    if sr_model.FINALIZER not in ctx.sr.finalizers:
        return None
    planned = await _run(ctx, now=now)
    if not planned.finalizer_removable:
        return planned.requeue_after
    await set_finalizers(ctx.writer, ctx.sr, [f for f in ctx.sr.finalizers if f != sr_model.FINALIZER])
    log.info("finalizer removed", sr=ctx.sr.name)
    return None
