"""``sro.dev/optional``: skip an object whose kind the cluster does not serve.

A ServiceMonitor needs the Prometheus operator; a recipe marks it optional so clusters
without it still get the rest. A kind that is not served and not optional is
RecipeInvalid: the recipe cannot work on this cluster, and nothing of it is written.
Skipped objects are kept aside so the engine can post a warning Event for each.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sro import errors
from sro.hooks import base, keys
from sro.model import desired

ANNOTATION = "optional"


def apply(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    out: list[desired.DesiredObject] = []
    for original in objects:
        is_optional = keys.flag(original, ANNOTATION)
        obj = dataclasses.replace(original, optional=is_optional)
        api_version = str(obj.body.get("apiVersion", ""))
        if ctx.is_served(api_version, obj.kind) or _defined_by_recipe(api_version, obj.kind, objects):
            out.append(obj)
        elif is_optional:
            ctx.problems.warn(
                f"{ctx.locate(obj, 'kind:')}: {obj.ref}: kind {obj.kind} ({api_version}) is not served "
                "by the cluster; skipped (optional)"
            )
        else:
            ctx.problems.add(
                errors.RecipeInvalid(
                    f"{obj.ref}: kind {obj.kind} ({api_version}) is not served by the cluster; "
                    'mark it sro.dev/optional: "true" if the recipe works without it',
                    location=ctx.locate(obj, "kind:"),
                )
            )
    return out


def _defined_by_recipe(api_version: str, kind: str, objects: Sequence[desired.DesiredObject]) -> bool:
    """Whether one of the recipe's own CustomResourceDefinitions serves the kind."""
    return any(crd_serves(o, api_version, kind) for o in objects if o.kind == "CustomResourceDefinition")


def crd_serves(crd: desired.DesiredObject, api_version: str, kind: str) -> bool:
    spec = crd.body.get("spec") or {}
    group = spec.get("group", "")
    if (spec.get("names") or {}).get("kind") != kind:
        return False
    return any(f"{group}/{v.get('name')}" == api_version for v in spec.get("versions") or ())


def crd_scope(objects: Sequence[desired.DesiredObject], api_version: str, kind: str) -> bool | None:
    """Scope of a kind served by one of the recipe's CRDs (True: namespaced), None if none."""
    for crd in objects:
        if crd.kind == "CustomResourceDefinition" and crd_serves(crd, api_version, kind):
            return bool((crd.body.get("spec") or {}).get("scope", "Namespaced") == "Namespaced")
    return None
