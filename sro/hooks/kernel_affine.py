"""``sro.dev/kernel-affine``: one copy of an object per kernel group.

The render engine already rendered such a document once per kernel group (it has to:
the template uses ``kernel`` and ``os``). This hook makes the copies distinct and
targeted: the name gets a readable, bounded suffix with a hash of the group (so it is
unique even when two kernels sanitise alike, and fits a DaemonSet's 63 characters),
the ``app`` label and selectors follow the new name, and workloads select only the
nodes of their group by NFD's kernel label (and OS labels when the nodes carry them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sro import errors
from sro.hooks import base, keys, podspec
from sro.model import desired, kernels, names

ANNOTATION = "kernel-affine"


def suffix(name: str, group: desired.KernelGroup) -> str:
    """``name`` made specific to ``group``: ``<name>-<kernel>-<hash>``, at most 63 characters."""
    return names.suffixed(name, group.kernel, identity=f"{group.key}|{group.arch}")


def apply(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    out: list[desired.DesiredObject] = []
    for obj in objects:
        if obj.kernel_group is None:
            if keys.flag(obj, ANNOTATION):
                ctx.problems.add(
                    errors.RecipeInvalid(
                        f'{obj.ref}: sro.dev/kernel-affine must be written literally as "true" in the source '
                        "(it decides how the document is rendered)",
                        location=ctx.locate(obj, "kernel-affine"),
                    )
                )
                continue
            out.append(obj)
            continue
        out.append(_specialise(obj, obj.kernel_group, ctx))
    return out


def _specialise(
    obj: desired.DesiredObject, group: desired.KernelGroup, ctx: base.Context
) -> desired.DesiredObject:
    new, body = base.edit(obj)
    meta = base.metadata(body)
    meta["name"] = suffix(str(meta["name"]), group)
    old_app = (meta.get("labels") or {}).get("app")
    if old_app:
        new_app = suffix(str(old_app), group)
        _rewrite_app(body, str(old_app), new_app)
    spec = podspec.pod_spec(body)
    if spec is not None:
        selector = base.sub(spec, "nodeSelector")
        selector.update(kernels.group_selector(group, ctx.members(group)))
    return new


def _rewrite_app(body: dict[str, Any], old: str, new: str) -> None:
    """Point every ``app`` label and selector that named ``old`` at ``new``."""
    places: list[Any] = [base.metadata(body).get("labels")]
    spec = body.get("spec")
    if isinstance(spec, dict):
        selector = spec.get("selector")
        if isinstance(selector, dict):
            places.extend([selector.get("matchLabels"), selector])  # workloads; Services select bare
    template = podspec.pod_template(body)
    if template is not None and template is not body:
        places.append(base.sub(template, "metadata").get("labels"))
    for labels in places:
        if isinstance(labels, dict) and labels.get("app") == old:
            labels["app"] = new
