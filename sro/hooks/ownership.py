"""Marking every object as the SpecialResource's and putting namespaced ones in its namespace.

Each object gets ``sro.dev/owner: <sr>`` and ``sro.dev/state: <state>``: the operator
finds (and, on removal, deletes) what it made by these labels, including cluster-scoped
objects and objects whose owner reference was lost. Pod templates get them too: the
operator watches only Pods carrying the owner label, and reads readiness per node from
them. Namespaced objects go to the operand namespace; one that names another namespace
is refused, and one whose scope is unknown is refused too (an optional one of an
unserved kind never gets here). The owner reference needs the SpecialResource's uid,
known only to the engine: ``add_owner_reference`` is for it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from sro import errors
from sro.hooks import base, optional
from sro.model import desired
from sro.model import specialresource as srmodel
from sro.render import kinds

STATE_LABEL = "sro.dev/state"


def apply(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    out: list[desired.DesiredObject] = []
    namespace = ctx.sr.spec.namespace
    for obj in objects:
        api_version = str(obj.body.get("apiVersion", ""))
        scoped = ctx.is_namespaced(api_version, obj.kind)
        if scoped is None:
            scoped = optional.crd_scope(objects, api_version, obj.kind)
        # Only the labels (the object's and its pod template's) and the namespace change.
        new, body = base.edit_at(obj, ("metadata", "labels"), ("spec", "template", "metadata", "labels"))
        meta = base.metadata(body)
        named = meta.get("namespace")
        if scoped is None:
            ctx.problems.add(
                errors.RecipeInvalid(
                    f"{obj.ref}: cannot tell whether kind {obj.kind} ({api_version}) is namespaced",
                    location=ctx.locate(obj, "kind:"),
                )
            )
            continue
        if scoped:
            if named not in (None, "", namespace):
                ctx.problems.add(
                    errors.RecipeInvalid(
                        f"{obj.ref}: names namespace {named!r}; namespaced objects go to the operand "
                        f"namespace {namespace!r} (leave metadata.namespace out)",
                        location=ctx.locate(obj, "namespace:"),
                    )
                )
                continue
            meta["namespace"] = namespace
            _namespace_after_name(meta)
        elif named:
            ctx.problems.add(
                errors.RecipeInvalid(
                    f"{obj.ref}: {obj.kind} is cluster-scoped and must not name a namespace",
                    location=ctx.locate(obj, "namespace:"),
                )
            )
            continue
        _label(meta, sr=ctx.sr.name, state=obj.state)
        template = base.sub(base.sub(body, "spec"), "template") if obj.kind in kinds.POD_TEMPLATES else None
        if template is not None:
            _label(base.sub(template, "metadata"), sr=ctx.sr.name, state=obj.state)
        out.append(new)
    return out


def _label(meta: dict[str, Any], *, sr: str, state: str) -> None:
    labels = base.sub(meta, "labels")
    labels[srmodel.OWNER_LABEL] = sr
    labels[STATE_LABEL] = state


def _namespace_after_name(meta: dict[str, Any]) -> None:
    """Keep ``name, namespace`` first in metadata so printed objects read naturally."""
    ordered = {"name": meta.pop("name"), "namespace": meta.pop("namespace")}
    rest = dict(meta)
    meta.clear()
    meta.update(ordered)
    meta.update(rest)


def add_owner_reference(body: Mapping[str, Any], sr: srmodel.SpecialResource) -> dict[str, Any]:
    """A copy of ``body`` owned by ``sr`` (any other controller reference to it replaced)."""
    out = dict(body)
    meta = dict(out.get("metadata") or {})
    refs = [
        r
        for r in meta.get("ownerReferences") or ()
        if r.get("uid") != sr.uid and not (r.get("kind") == srmodel.KIND and r.get("name") == sr.name)
    ]
    meta["ownerReferences"] = [*refs, sr.owner_reference()]
    out["metadata"] = meta
    return out


def owned(obj: desired.DesiredObject, sr: srmodel.SpecialResource) -> desired.DesiredObject:
    """``obj`` with the owner reference to ``sr`` (requires ``sr.uid``)."""
    return dataclasses.replace(obj, body=add_owner_reference(obj.body, sr))
