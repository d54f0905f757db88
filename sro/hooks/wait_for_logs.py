"""``sro.dev/wait-for-logs``: also wait until every container log of the object's pods matches.

The value is a regular expression in RE2 syntax (``sro.model.logpattern``: matched in
linear time, so no recipe can stall the planner with a backtracking pattern), compiled
when the recipe is validated so a bad one, or one RE2 cannot run (lookaround,
backreferences), is RecipeInvalid before anything is written, never an error at run
time. The engine reads the tail of each container's log (``engine.pod_logs``) and the
planner matches the pattern line by line, lines cut at 4 KiB; a match is remembered for
the pod's life, so a ready line followed by more output still counts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sro import errors
from sro.hooks import base, keys, podspec
from sro.model import desired, logpattern

ANNOTATION = "wait-for-logs"


def check(value: str) -> str | None:
    return logpattern.problem(value)


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
        out.append(dataclasses.replace(obj, wait_for_logs=logpattern.compile_pattern(pattern)))
    return out
