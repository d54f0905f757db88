"""What a recipe may create: an administrator's policy, enforced alike by lint, render and run.

A recipe is code someone else wrote, rendered with values a tenant chose, and applied
with the operator's service account. Without a policy it could create anything that
account can: force-apply a Node (taints, ``unschedulable``, forged ``<sr>.sro.dev/complete``
labels that fake a dependency), rewrite another SpecialResource, install a webhook or an
API service, or bind a powerful role to any subject. The default policy refuses:

* the kinds in ``model.recipe_policy.DENIED_KINDS`` (Node, SpecialResource, Namespace,
  CustomResourceDefinition, APIService, admission webhook and policy configurations);
* a (Cluster)RoleBinding with a subject other than a ServiceAccount of the operand
  namespace;
* any label under ``sro.dev/`` set by the recipe itself (the operator's own bookkeeping:
  ``sro.dev/owner``, ``sro.dev/state``, ``sro.dev/node``). Annotations under ``sro.dev/``
  are the hooks' keys, checked by ``hooks.keys``.

Objects in a namespace other than the operand namespace are refused by ``ownership``.
An administrator can allow more (``model.recipe_policy.RecipePolicy.allowed_kinds``, e.g. a recipe that ships
a CRD) or deny more. Each refusal is ``RecipeInvalid`` at the object's ``kind:`` line, and
the whole recipe is refused before anything is written. Runs first, on what the recipe
rendered, before any hook adds objects or labels of the operator's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sro import errors
from sro.hooks import base
from sro.model import desired, recipe_policy

RESERVED_PREFIX = "sro.dev/"
BINDINGS = frozenset({"RoleBinding", "ClusterRoleBinding"})


def _labels(body: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = body.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def _foreign_subjects(body: Mapping[str, Any], namespace: str) -> list[str]:
    out = []
    subjects = body.get("subjects")
    for subject in subjects if isinstance(subjects, list) else ():
        if not isinstance(subject, Mapping):
            out.append(repr(subject)[:80])
            continue
        kind, name = str(subject.get("kind", "")), str(subject.get("name", ""))
        if kind != "ServiceAccount" or str(subject.get("namespace", "")) != namespace:
            out.append(f"{kind} {subject.get('namespace', '')}/{name}".replace(" /", " "))
    return out


def check(obj: desired.DesiredObject, ctx: base.Context, policy: recipe_policy.RecipePolicy) -> list[str]:
    """Why the policy refuses ``obj`` (empty: it may be created)."""
    why = []
    if policy.denies(obj.ref.group, obj.kind):
        why.append(f"a recipe may not create {obj.kind} objects (recipe policy)")
    reserved = sorted(str(k) for k in _labels(obj.body) if str(k).startswith(RESERVED_PREFIX))
    if reserved:
        why.append(f"labels under {RESERVED_PREFIX} are the operator's own: {', '.join(reserved)}")
    if obj.kind in BINDINGS and not policy.foreign_subjects:
        foreign = _foreign_subjects(obj.body, ctx.sr.spec.namespace)
        if foreign:
            why.append(
                f"a binding may only name ServiceAccounts of namespace {ctx.sr.spec.namespace}, "
                f"not {', '.join(foreign)} (recipe policy)"
            )
    return why


def apply(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    allowed = []
    for obj in objects:
        why = check(obj, ctx, ctx.policy)
        for reason in why:
            ctx.problems.add(errors.RecipeInvalid(f"{obj.ref}: {reason}", location=ctx.locate(obj, "kind:")))
        if not why:
            allowed.append(obj)
    return allowed
