"""The record of what recipes may create (the checks are ``sro.hooks.policy``).

Plain data, so it can travel from the command line (``sro.settings``) through the
operator's settings to every render, and be the same for ``sro lint``, ``sro render`` and
``sro run``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
