"""``sro.dev/builds: <image>``: a Job that builds a kernel group's driver image.

A recipe names its driver image by kernel, and a kernel nobody built a driver for has no
image. A *build state* lets sro make it: a state holding a kernel-affine Job annotated
with the image it produces (rendered like the rest of the document, so
``"{{ set.image }}:{{ kernel.full }}"`` names the same image the driver DaemonSet runs).
The planner runs that Job only for a kernel group whose image the registry says is
missing, or again when the build's inputs change (``sro.plan.builds``); a build state is
never walked on the nodes, so it gates nothing and shows no status row of its own.

This hook checks the annotation: its value must read as an image reference with a tag,
it belongs on a kernel-affine ``batch/v1`` Job only (a build is per kernel group), and a
state holding a build Job holds no other workload (what it would gate nobody waits for).
Any of these broken is RecipeInvalid at the annotation's line, before anything is written.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence

from sro import errors
from sro.hooks import base, keys, podspec
from sro.model import desired

ANNOTATION = "builds"
FROM_ANNOTATION = "build-from"
"""``sro.dev/build-from: "<image>[,<image>…]"``: the base images a build Job starts from
inside its script (a ``FROM`` line), which are no container of the Job: their digests
are among the build's inputs, so a new base image rebuilds once."""
FROM_MAX = 8
IMAGE_MAX = 512
_IMAGE = re.compile(
    r"[a-z0-9][a-z0-9._-]*(:[0-9]+)?(/[a-z0-9][a-z0-9._-]*)*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
)


def check(value: str) -> str | None:
    if len(value) > IMAGE_MAX:
        return f"is longer than {IMAGE_MAX} characters"
    if not _IMAGE.fullmatch(value):
        return "must name an image by repository and tag (registry/repository:tag, no digest)"
    return None


_REFERENCE = re.compile(
    r"[a-z0-9][a-z0-9._-]*(:[0-9]+)?(/[a-z0-9][a-z0-9._-]*)*"  # registry and repository
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?"  # tag, digest
)


def check_from(value: str) -> str | None:
    images = [v.strip() for v in value.split(",")]
    if len(images) > FROM_MAX:
        return f"names more than {FROM_MAX} images"
    bad = next((i for i in images if len(i) > IMAGE_MAX or not _REFERENCE.fullmatch(i)), None)
    if bad is not None:
        return f"must list image references separated by commas ({bad!r} is none)"
    return None


def bases(obj: desired.DesiredObject) -> tuple[str, ...]:
    """The base images ``obj`` names in ``sro.dev/build-from``."""
    value = keys.get(obj, FROM_ANNOTATION)
    return tuple(dict.fromkeys(v.strip() for v in value.split(","))) if value else ()


def produces(obj: desired.DesiredObject) -> str | None:
    """The image ``obj`` builds, or None when it is no build Job."""
    return keys.get(obj, ANNOTATION)


def is_build(obj: desired.DesiredObject) -> bool:
    return produces(obj) is not None


def build_states(objects: Iterable[desired.DesiredObject]) -> frozenset[str]:
    """The states that hold a build Job."""
    return frozenset(o.state for o in objects if is_build(o))


def without_builds(state: desired.DesiredState) -> desired.DesiredState:
    """``state`` without its build Jobs (and states left empty by that): what is applied
    whatever the registry says (``sro render`` prints this; the Jobs run only for a
    missing image)."""
    objects = tuple(o for o in state.objects if not is_build(o))
    gone = build_states(state.objects) - {o.state for o in objects}  # nothing else in them
    states = tuple(
        dataclasses.replace(s, after=tuple(a for a in s.after if a not in gone))
        for s in state.states
        if s.name not in gone
    )
    return dataclasses.replace(state, objects=objects, states=states)


def apply(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    states = build_states(objects)
    out: list[desired.DesiredObject] = []
    for obj in objects:
        where = ctx.locate(obj, ANNOTATION if is_build(obj) else "kind")
        problem = ""
        if is_build(obj):
            if (obj.ref.api_version, obj.ref.kind) != ("batch/v1", "Job"):
                problem = "sro.dev/builds belongs on a batch/v1 Job"
            elif obj.kernel_group is None:
                problem = 'a build Job must be kernel-affine (sro.dev/kernel-affine: "true")'
        elif keys.get(obj, FROM_ANNOTATION) is not None:
            problem = "sro.dev/build-from belongs on a Job annotated sro.dev/builds"
            where = ctx.locate(obj, FROM_ANNOTATION)
        elif obj.state in states and podspec.runs_pods(obj.kind):
            problem = f"state {obj.state} builds images: its only workloads are Jobs annotated sro.dev/builds"
        if problem:
            ctx.problems.add(errors.RecipeInvalid(f"{obj.ref}: {problem}", location=where))
            continue
        out.append(obj)
    return out


def keep(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    """``sro.dev/build-from`` changes no object (``apply`` checks where it is written)."""
    return list(objects)
