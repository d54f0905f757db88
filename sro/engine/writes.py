"""Carrying out a plan's object writes: dry-run on opening, apply what changed, delete.

Every object sro makes carries the label ``sro.dev/owner: <sr>`` and an owner reference to
the SpecialResource (cluster-scoped owners are valid for namespaced and cluster-scoped
dependents alike), so the caches find it by label and the garbage collector removes it
with the SpecialResource even if sro is not running.

When a state opens (none of its objects exists yet), all its objects are first sent as a
server-side dry-run: an object the API server refuses leaves the whole state unwritten,
instead of half a state the walk would wait on forever. After that, an object is applied
only when ``sro.apply.diff`` says the apply would change something.

Errors are sorted, not raised (contract section 5): a *permanent* refusal (400, 404 for a
kind, 422, 403 except for a new namespace's service account) blocks that state and becomes
``ApplyFailed``; a *transient* one (no answer, 409, 429, 5xx) is reported so the engine can
retry with backoff and show it; other states go on in both cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from sro import errors
from sro.apply import diff
from sro.cache import projections
from sro.engine import ports, waves
from sro.engine import sent as sent_
from sro.model import bodies as api_bodies
from sro.model import desired
from sro.model import specialresource as sr_model
from sro.plan import inputs, lifecycle, outcomes

log = structlog.get_logger(__name__)


@dataclass(frozen=True, kw_only=True)
class WriteReport:
    applied: int = 0
    deleted: int = 0
    absent: frozenset[desired.ObjectRef] = frozenset()  # deletions answered "already gone"
    taken: tuple[lifecycle.Deletion, ...] = ()  # deletions done: accepted, or answered "already gone"
    failures: tuple[outcomes.Failure, ...] = ()
    blocked_states: frozenset[str] = frozenset()


def unsent(
    objects: Sequence[desired.DesiredObject],
    *,
    sr: sr_model.SpecialResource,
    sent: sent_.Sent,
) -> tuple[desired.DesiredObject, ...]:
    """``objects`` this process has not applied with the same body before. For the pods
    that follow a node's label patch: while a watch stalls, every pass patches the node
    again and would apply its pod again, although the pod is there; once the caches show
    the labels and the pod, the regular path (``apply_objects``) takes over."""
    return tuple(o for o in objects if (sent.applied(o.ref) or ("", 0))[0] != sent.digest(o, sr))


def merged(first: WriteReport, second: WriteReport) -> WriteReport:
    """Two reports of one pass as one."""
    return WriteReport(
        applied=first.applied + second.applied,
        deleted=first.deleted + second.deleted,
        failures=_in_order((*first.failures, *second.failures)),
        blocked_states=first.blocked_states | second.blocked_states,
    )


async def apply_objects(
    writer: ports.Writer,
    planned: Sequence[desired.DesiredObject],
    *,
    sr: sr_model.SpecialResource,
    live: Mapping[desired.ObjectRef, projections.ObjectView],
    foreign: Mapping[desired.ObjectRef, projections.ObjectView],
    opening: frozenset[str],
    blocks: Mapping[str, frozenset[str]],
    limit: int = waves.DEFAULT_LIMIT,
    sent: sent_.Sent | None = None,
    lagging: frozenset[tuple[str, str]] = frozenset(),
) -> WriteReport:
    """Apply the plan's objects in its order; dry-run the plan's ``opening`` states first.

    ``sent`` remembers each body this process applied (its hash and the resourceVersion the
    apply returned): while the cache has not shown that write (the cached object is older,
    or absent while its kind is ``lagging``), the same body is not sent again
    (``diff.already_sent``), so a watch down for seconds does not turn every pass into the
    same apply again.

    A state whose dry-run or write is refused for good is not written, and neither are the
    states the plan says it ``blocks``; each object is sent only when ``apply.diff`` says
    the apply would change something. Objects of one kind rank and one state form a wave
    (``waves``): sent concurrently, up to ``limit`` at once, before the next wave.

    sro never adopts: an object labelled as this SpecialResource's without its owner
    reference (``foreign``) is refused, and so is a cluster-scoped one the cache does not
    hold that a direct read finds made by someone else (namespaced objects live in the
    operand namespace, which sro created). Both are ``ForeignObject`` failures.
    """
    memory = sent if sent is not None else sent_.Sent()
    bodies = [(obj, *memory.owned(obj, sr)) for obj in planned]
    failures: list[outcomes.Failure] = []
    blocked: set[str] = set()
    applied = 0

    async def dry_run(item: tuple[desired.DesiredObject, dict[str, Any], str]) -> None:
        obj, body, digest = item
        try:
            await writer.apply(body, dry_run=True, digest=digest)
        except errors.NotFound as exc:
            # The operand namespace or a CRD of the same state is not there yet: the real
            # apply, in order, decides.
            log.debug("dry-run skipped", sr=sr.name, ref=str(obj.ref), error=str(exc))
        except errors.SroError as exc:
            failures.append(
                outcomes.Failure(state=obj.state, ref=obj.ref, error=exc, dry_run=True, source=obj.source)
            )
            blocked.add(obj.state)

    async def apply(item: tuple[desired.DesiredObject, dict[str, Any], str]) -> None:
        nonlocal applied
        obj, body, digest = item
        if obj.state in blocked:
            return
        current = live.get(obj.ref)
        refusal = await _not_ours(writer, obj.ref, sr=sr, current=current, foreign=foreign)
        if refusal is not None:
            failures.append(outcomes.Failure(state=obj.state, ref=obj.ref, error=refusal, source=obj.source))
            blocked.update((obj.state, *blocks.get(obj.state, ())))
            return
        kind_lags = (obj.ref.api_version, obj.ref.kind) in lagging
        cached = api_bodies.version_number(current.resource_version) if current is not None else None
        if diff.already_sent(
            body, sent=memory.applied(obj.ref), cached_version=cached, kind_lagging=kind_lags, digest=digest
        ):
            return
        if not diff.needs_apply(body, current.body if current is not None else None, digest=digest):
            return
        try:
            answer = await writer.apply(body, digest=digest)
            returned = api_bodies.version_of(answer)
            memory.record(obj.ref, digest=digest, version=returned)
            applied += 1
        except errors.SroError as exc:
            failures.append(outcomes.Failure(state=obj.state, ref=obj.ref, error=exc, source=obj.source))
            if outcomes.is_permanent(exc):
                blocked.update((obj.state, *blocks.get(obj.state, ())))

    opening_bodies = sorted((b for b in bodies if b[0].state in opening), key=lambda b: b[0].state)
    await waves.in_waves(opening_bodies, wave=lambda b: b[0].state, run=dry_run, limit=limit)
    blocked.update(*(blocks.get(state, ()) for state in list(blocked)))
    await waves.in_waves(
        bodies, wave=lambda b: (lifecycle.kind_rank(b[0].kind), b[0].state), run=apply, limit=limit
    )
    return WriteReport(applied=applied, failures=_in_order(failures), blocked_states=frozenset(blocked))


async def _not_ours(
    writer: ports.Writer,
    ref: desired.ObjectRef,
    *,
    sr: sr_model.SpecialResource,
    current: projections.ObjectView | None,
    foreign: Mapping[desired.ObjectRef, projections.ObjectView],
) -> errors.ForeignObject | None:
    """Why writing ``ref`` would adopt someone else's object, or None."""
    other = foreign.get(ref)
    body: Mapping[str, Any] | None = other.body if other is not None else None
    if body is None and current is None and not ref.namespace:
        try:
            body = await writer.get(ref)
        except errors.NotFound:
            return None
    if body is None or inputs.is_ours(body, sr.uid):
        return None
    owners = ", ".join(
        f"{r.get('kind')}/{r.get('name')}"
        for r in (body.get("metadata") or {}).get("ownerReferences") or ()
        if isinstance(r, Mapping)
    )
    return errors.ForeignObject(
        f"{ref} exists and was not made by SpecialResource {sr.name} "
        f"(owners: {owners or 'none'}); sro never adopts an object"
    )


async def delete_objects(
    writer: ports.Writer,
    deletions: Sequence[lifecycle.Deletion],
    *,
    sr_name: str,
    limit: int = waves.DEFAULT_LIMIT,
) -> WriteReport:
    """Delete in the plan's order, one kind rank at a time (concurrently within it); a
    failure is reported and the rest go on."""
    deleted = 0
    absent: list[desired.ObjectRef] = []
    taken: list[lifecycle.Deletion] = []
    failures: list[outcomes.Failure] = []

    async def delete(deletion: lifecycle.Deletion) -> None:
        nonlocal deleted
        try:
            if await writer.delete(deletion.ref, uid=deletion.uid):
                deleted += 1
                taken.append(deletion)
                log.info("object deleted", sr=sr_name, ref=str(deletion.ref), reason=deletion.reason)
                return
        except errors.NotFound:
            pass
        except errors.SroError as exc:
            failures.append(outcomes.Failure(state="", ref=deletion.ref, error=exc))
            return
        absent.append(deletion.ref)
        taken.append(deletion)

    await waves.in_waves(deletions, wave=lambda d: lifecycle.kind_rank(d.ref.kind), run=delete, limit=limit)
    return WriteReport(
        deleted=deleted, absent=frozenset(absent), taken=tuple(taken), failures=_in_order(failures)
    )


def _in_order(failures: Sequence[outcomes.Failure]) -> tuple[outcomes.Failure, ...]:
    """Failures in a stable order (a wave finishes in any order), so an unchanged world
    reports them the same way every pass and the status does not flap."""
    return tuple(sorted(failures, key=lambda f: (f.state, str(f.ref), f.dry_run)))
