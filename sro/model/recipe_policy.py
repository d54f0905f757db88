"""The record of what recipes may create (the checks are ``sro.hooks.policy``).

Plain data, so it can travel from the command line (``sro.settings``) through the
operator's settings to every render, and be the same for ``sro lint``, ``sro render`` and
``sro run``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sro import errors

DENIED_KINDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("", "Node"),
        ("sro.dev", "SpecialResource"),
        ("", "Namespace"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
    }
)
"""(API group, kind) a recipe may not create by default; "" is the core group."""


@dataclass(frozen=True, kw_only=True)
class RecipePolicy:
    """What recipes may create. ``denied_kinds`` minus ``allowed_kinds`` is refused;
    ``foreign_subjects`` allows bindings to subjects outside the operand namespace."""

    denied_kinds: frozenset[tuple[str, str]] = DENIED_KINDS
    allowed_kinds: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    foreign_subjects: bool = False

    def denies(self, group: str, kind: str) -> bool:
        key = (group, kind)
        return key in self.denied_kinds and key not in self.allowed_kinds


DEFAULT = RecipePolicy()


def _kinds(value: Any, *, field_name: str, source: str) -> frozenset[tuple[str, str]]:
    if value is None:
        return frozenset()
    if not isinstance(value, list):
        raise errors.RecipeInvalid(f"{field_name} must be a list of {{group, kind}}", location=_at(source))
    out = set()
    for i, item in enumerate(value):
        if (
            not isinstance(item, dict)
            or set(item) - {"group", "kind"}
            or not isinstance(item.get("kind"), str)
        ):
            raise errors.RecipeInvalid(
                f"{field_name}[{i}] must be a mapping with a kind and an optional group", location=_at(source)
            )
        group = item.get("group", "")
        if not isinstance(group, str):
            raise errors.RecipeInvalid(f"{field_name}[{i}].group must be a string", location=_at(source))
        out.add((group, str(item["kind"])))
    return frozenset(out)


def _at(source: str) -> errors.Location:
    return errors.Location(file=source)


def from_document(data: Any, *, source: str) -> RecipePolicy:
    """The policy an administrator wrote (``source`` names the file in errors)::

        allowKinds:              # kinds denied by default that recipes may create here
          - {group: apiextensions.k8s.io, kind: CustomResourceDefinition}
        denyKinds:               # more kinds recipes may not create
          - {group: "", kind: Secret}
        allowForeignSubjects: false

    Anything else is ``RecipeInvalid``: a misspelt key must not loosen or tighten nothing.
    """
    if data is None:
        return DEFAULT
    if not isinstance(data, dict):
        raise errors.RecipeInvalid("a recipe policy must be a mapping", location=_at(source))
    unknown = sorted(str(k) for k in data if k not in ("allowKinds", "denyKinds", "allowForeignSubjects"))
    if unknown:
        raise errors.RecipeInvalid(
            f"unknown key(s) in the recipe policy: {', '.join(unknown)}", location=_at(source)
        )
    foreign = data.get("allowForeignSubjects", False)
    if not isinstance(foreign, bool):
        raise errors.RecipeInvalid("allowForeignSubjects must be true or false", location=_at(source))
    return RecipePolicy(
        denied_kinds=DENIED_KINDS | _kinds(data.get("denyKinds"), field_name="denyKinds", source=source),
        allowed_kinds=_kinds(data.get("allowKinds"), field_name="allowKinds", source=source),
        foreign_subjects=foreign,
    )
