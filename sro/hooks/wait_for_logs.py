"""``sro.dev/wait-for-logs``: also wait until every container log of the object's pods matches.

The value is a Python regular expression, compiled when the recipe is validated so a
bad one is RecipeInvalid before anything is written, never an error at run time. The
engine reads the tail of each container's log (``engine.pod_logs``) and the planner
matches the pattern line by line, lines cut at 4 KiB; a match is remembered for the
pod's life, so a ready line followed by more output still counts.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from sro import errors
from sro.hooks import base, keys, podspec
from sro.model import desired

ANNOTATION = "wait-for-logs"


def check(value: str) -> str | None:
    if not value:
        return "must be a non-empty regular expression"
    try:
        re.compile(value)
    except re.error as exc:
        return f"is not a valid regular expression: {exc}"
    return None


def apply(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    out: list[desired.DesiredObject] = []
    for obj in objects:
        pattern = keys.get(obj, ANNOTATION)
        if pattern is None:
            out.append(obj)
            continue
        if not podspec.runs_pods(obj.kind):
            ctx.problems.add(
                errors.RecipeInvalid(
                    f"{obj.ref}: sro.dev/wait-for-logs applies to kinds that run pods",
                    location=ctx.locate(obj, "wait-for-logs"),
                )
            )
            continue
        out.append(dataclasses.replace(obj, wait_for_logs=re.compile(pattern)))
    return out
