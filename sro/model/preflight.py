"""The SpecialResource's ``spec.preflight``: kernels the nodes are expected to boot soon.

Before a cluster upgrade moves nodes to a new kernel, an administrator wants to know
whether every image a kernel-affine recipe names by kernel exists for it, and to have the
missing ones built while the nodes still run the old kernel (the original operator's
"build ahead for watched versions"). ``sro preflight --kernel`` answers once; this field
asks sro to answer on every pass and keep the answer in ``status.preflight``. It lives in
the model because the SpecialResource's parser and the planner both read it; the bounds
are the CRD's, repeated so a body written without the CRD (``sro lint`` on a file) is held
to the same.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sro.model import desired

KERNELS_MAX = 16
KERNEL_MAX = 63
"""A kernel is an NFD label value (``kernel-version.full``): at most 63 characters."""
OS_MAX = 64
_KERNEL = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_OS = re.compile(r"[a-z0-9][a-z0-9._-]{0,30}:[A-Za-z0-9][A-Za-z0-9._-]{0,30}")


@dataclass(frozen=True, kw_only=True)
class Kernel:
    """One expected kernel; ``os`` None: each OS among the selected nodes."""

    kernel: str
    os: desired.OsRelease | None = None


@dataclass(frozen=True, kw_only=True)
class Preflight:
    """``spec.preflight``: the expected kernels, and whether their missing images are
    built ahead with the recipe's build state."""

    kernels: tuple[Kernel, ...] = ()
    build: bool = False


NONE = Preflight()


def parse(raw: Any, problems: list[str]) -> Preflight:
    """``spec.preflight`` as a value; each problem appended to ``problems``."""
    if raw is None:
        return NONE
    if not isinstance(raw, Mapping):
        problems.append("spec.preflight must be a mapping")
        return NONE
    unknown = set(raw) - {"kernels", "build"}
    if unknown:
        problems.append(f"unknown spec.preflight fields {sorted(unknown)}")
    build = raw.get("build", False)
    if not isinstance(build, bool):
        problems.append("spec.preflight.build must be true or false")
        build = False
    items = raw.get("kernels") or []
    if not isinstance(items, list) or len(items) > KERNELS_MAX:
        problems.append(f"spec.preflight.kernels must be a list of at most {KERNELS_MAX} entries")
        return Preflight(build=build)
    kernels: list[Kernel] = []
    for i, item in enumerate(items):
        at = f"spec.preflight.kernels[{i}]"
        if not isinstance(item, Mapping) or set(item) - {"kernel", "os"}:
            problems.append(f"{at} must be a mapping of kernel and os")
            continue
        kernel, os_text = item.get("kernel"), item.get("os")
        if not isinstance(kernel, str) or not _KERNEL.fullmatch(kernel):
            problems.append(
                f"{at}.kernel {kernel!r} must be a kernel version as NFD labels it (a label value)"
            )
            continue
        os = None
        if os_text is not None:
            if not isinstance(os_text, str) or not _OS.fullmatch(os_text):
                problems.append(f"{at}.os {os_text!r} must be ID:VERSION_ID as in os-release, e.g. rhel:9.4")
                continue
            os_id, _, version = os_text.partition(":")
            os = desired.OsRelease(id=os_id, version_id=version)
        entry = Kernel(kernel=kernel, os=os)
        if entry in kernels:
            problems.append(f"{at} repeats an earlier entry")
            continue
        kernels.append(entry)
    return Preflight(kernels=tuple(kernels), build=build)
