"""``sro.dev/pin-digest``: whether a kernel-affine workload runs the digest sro checked.

When sro checks a kernel group's images against their registry (``sro run
--image-check-registries``), it rewrites each container image of that group's
kernel-affine workloads to ``repository@sha256:…``, the manifest the registry answered
with: what was checked is what runs, and a tag pushed over later does not change a
running driver behind sro's back. That rewrite needs a registry, so it is the engine's,
after the render (``sro render`` prints the tag; ``sro render --live`` too). This hook
only makes the annotation known: ``"false"`` on a document keeps its tags as written
(for a registry that serves a tag under a digest the nodes cannot pull, say).
"""

from __future__ import annotations

from collections.abc import Sequence

from sro.hooks import base, keys
from sro.model import desired

ANNOTATION = "pin-digest"


def pinned(obj: desired.DesiredObject) -> bool:
    """Whether ``obj``'s images are pinned by digest when checked (default: yes)."""
    return keys.flag(obj, ANNOTATION, default=True)


def apply(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    return list(objects)
