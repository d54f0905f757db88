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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from sro import errors
from sro.apply import diff
from sro.cache import projections
from sro.engine import ports
from sro.model import desired, views
from sro.model import specialresource as sr_model
from sro.plan import lifecycle, outcomes

log = structlog.get_logger(__name__)


@dataclass(frozen=True, kw_only=True)
class WriteReport:
    applied: int = 0
    deleted: int = 0
    failures: tuple[outcomes.Failure, ...] = ()
    blocked_states: frozenset[str] = frozenset()


def _labelled(meta: Mapping[str, Any], sr_name: str) -> dict[str, Any]:
    labels = dict(meta.get("labels") or {})
    labels[projections.OWNER_LABEL] = sr_name
    return {**meta, "labels": labels}


def owned_body(body: Mapping[str, Any], sr: sr_model.SpecialResource) -> dict[str, Any]:
    """``body`` with the owner label and an owner reference to ``sr`` (kept if already there).

    Rendering already labels recipe objects and their pod templates (``hooks.ownership``);
    the label is set here too for the objects the engine makes itself.
    """
    meta = _labelled(body.get("metadata") or {}, sr.name)
    refs = [
        r
        for r in meta.get("ownerReferences") or ()
        if r.get("uid") != sr.uid and not (r.get("kind") == sr_model.KIND and r.get("name") == sr.name)
    ]
    meta["ownerReferences"] = [*refs, sr.owner_reference()]
    return {**body, "metadata": meta}


def after_closure(blocked: set[str] | frozenset[str], states: Sequence[desired.StateSpec]) -> set[str]:
    """Every state that comes, directly or not, after one of ``blocked``."""
    out: set[str] = set()
    changed = True
    while changed:
        changed = False
        for spec in states:
            if spec.name not in out and any(a in blocked or a in out for a in spec.after):
                out.add(spec.name)
                changed = True
    return out


def opening_states(
    wanted: desired.DesiredState,
    live: Mapping[desired.ObjectRef, Any],
    planned: Iterable[desired.DesiredObject],
) -> frozenset[str]:
    """States the plan writes to for the first time: none of their desired objects exists."""
    started = {o.state for o in wanted.objects if o.ref in live}
    return frozenset(o.state for o in planned if o.state not in started)


async def apply_objects(
    writer: ports.Writer,
    planned: Sequence[desired.DesiredObject],
    *,
    sr: sr_model.SpecialResource,
    live: Mapping[desired.ObjectRef, projections.ObjectView],
    present: Mapping[desired.ObjectRef, Any],
    opening: frozenset[str],
    states: Sequence[desired.StateSpec] = (),
) -> WriteReport:
    """Apply the plan's objects in its order; dry-run opening states first.

    A state the dry-run refused is not written, and neither is any state after it (the
    planner may think it complete: its objects may not gate readiness).
    """
    bodies = [(obj, owned_body(obj.body, sr)) for obj in planned]
    failures: list[outcomes.Failure] = []
    blocked: set[str] = set()
    for obj, body in bodies:
        if obj.state not in opening or obj.state in blocked:
            continue
        try:
            await writer.apply(diff.stamped(body), dry_run=True)
        except errors.NotFound as exc:
            # The operand namespace or a CRD of the same state is not there yet: the real
            # apply, in order, decides.
            log.debug("dry-run skipped", sr=sr.name, ref=str(obj.ref), error=str(exc))
        except errors.SroError as exc:
            failures.append(
                outcomes.Failure(state=obj.state, ref=obj.ref, error=exc, dry_run=True, source=obj.source)
            )
            blocked.add(obj.state)
    blocked |= after_closure(blocked, states)
    applied = 0
    for obj, body in bodies:
        if obj.state in blocked:
            continue
        if obj.kind == "Pod" and obj.ref in present:
            continue  # a pod's spec is immutable: the planner recreates one that must change
        current = live.get(obj.ref)
        if not diff.needs_apply(body, current.body if current is not None else None):
            continue
        try:
            await writer.apply(diff.stamped(body))
            applied += 1
        except errors.SroError as exc:
            failures.append(outcomes.Failure(state=obj.state, ref=obj.ref, error=exc, source=obj.source))
            if outcomes.is_permanent(exc):
                blocked.add(obj.state)
    if applied:
        log.info("objects applied", sr=sr.name, count=applied)
    return WriteReport(applied=applied, failures=tuple(failures), blocked_states=frozenset(blocked))


def outdated_pods(
    objects: Mapping[desired.ObjectRef, Any], pods: Iterable[views.PodView]
) -> tuple[lifecycle.Deletion, ...]:
    """Pods of owned DaemonSets made from an older pod template.

    A DaemonSet with the ``OnDelete`` strategy (how driver DaemonSets avoid unloading a
    driver on every edit) never replaces its pods by itself, and readiness only counts
    pods of the current template: after a template change (a recipe edit, ``set``, or
    putting back a drifted field) the old pods are deleted so the node runs the new one
    and walks the states after it again. A RollingUpdate DaemonSet does this itself.
    """
    by_uid = {live.uid: live for live in objects.values() if live.ref.kind == "DaemonSet" and live.uid}
    out = []
    for pod in pods:
        live = by_uid.get(pod.owner_uid) if pod.owner_kind == "DaemonSet" else None
        if live is None or pod.deleting or live.deleting or not pod.template_generation:
            continue
        if pod.template_generation != str(live.template_generation):
            ref = desired.ObjectRef(api_version="v1", kind="Pod", namespace=pod.namespace, name=pod.name)
            reason = (
                f"made from template generation {pod.template_generation} of {live.ref}, "
                f"now {live.template_generation}"
            )
            out.append(lifecycle.Deletion(ref=ref, uid=pod.uid, reason=reason))
    return tuple(out)


async def delete_objects(
    writer: ports.Writer, deletions: Sequence[lifecycle.Deletion], *, sr_name: str
) -> WriteReport:
    """Delete in the plan's order; a failure is reported and the rest go on."""
    deleted = 0
    failures: list[outcomes.Failure] = []
    for deletion in deletions:
        try:
            await writer.delete(deletion.ref, uid=deletion.uid)
            deleted += 1
            log.info("object deleted", sr=sr_name, ref=str(deletion.ref), reason=deletion.reason)
        except errors.NotFound:
            continue
        except errors.SroError as exc:
            failures.append(outcomes.Failure(state="", ref=deletion.ref, error=exc))
    return WriteReport(deleted=deleted, failures=tuple(failures))
