"""Pod Security Standards levels and the SpecialResource's ``spec.podSecurity`` override.

sro labels the operand namespaces it creates with the Pod Security level their pods need
(``sro.plan.pod_security`` computes it); an administrator may say otherwise in the
SpecialResource. The value lives in the model because both the SpecialResource's parser
and the planner read it; what it means for a namespace is the planner's.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LABEL_PREFIX = "pod-security.kubernetes.io/"
MODES = ("enforce", "audit", "warn")
"""The admission modes, each a label ``pod-security.kubernetes.io/<mode>`` with its
``<mode>-version``."""
LATEST = "latest"
_VERSION = re.compile(r"^(latest|v1\.[0-9]{1,3})$")


class Level(enum.StrEnum):
    """A Pod Security Standard, from the most permissive to the strictest."""

    PRIVILEGED = "privileged"
    BASELINE = "baseline"
    RESTRICTED = "restricted"

    @property
    def strictness(self) -> int:
        return _ORDER.index(self)


_ORDER = (Level.PRIVILEGED, Level.BASELINE, Level.RESTRICTED)


@dataclass(frozen=True, kw_only=True)
class Override:
    """``spec.podSecurity``: a mode left out takes the computed level (``audit`` and
    ``warn`` take ``enforce``'s when only that is given); ``version`` pins the standards'
    version (``v1.36``) or follows the API server's (``latest``)."""

    enforce: Level | None = None
    audit: Level | None = None
    warn: Level | None = None
    version: str = LATEST

    def level(self, mode: str, *, computed: Level) -> Level:
        """The level of ``mode`` (one of ``MODES``) for a namespace whose pods need ``computed``."""
        given: Level | None = getattr(self, mode)
        if given is not None:
            return given
        return self.enforce if self.enforce is not None else computed


NONE = Override()


def parse(value: Any, problems: list[str]) -> Override:
    """``spec.podSecurity`` as an ``Override``; each problem is appended to ``problems``."""
    if value is None:
        return NONE
    if not isinstance(value, Mapping):
        problems.append("spec.podSecurity must be a mapping")
        return NONE
    unknown = set(value) - {*MODES, "version"}
    if unknown:
        problems.append(f"unknown spec.podSecurity fields {sorted(map(str, unknown))}")
    levels: dict[str, Level | None] = {}
    for mode in MODES:
        raw = value.get(mode)
        try:
            levels[mode] = None if raw is None else Level(str(raw))
        except ValueError:
            problems.append(f"spec.podSecurity.{mode} {raw!r} must be one of {', '.join(_ORDER)}")
            levels[mode] = None
    version = str(value.get("version") or LATEST)
    if not _VERSION.match(version):
        problems.append(f"spec.podSecurity.version {version!r} must be latest or v1.<minor>, e.g. v1.36")
        version = LATEST
    return Override(enforce=levels["enforce"], audit=levels["audit"], warn=levels["warn"], version=version)
