"""The SpecialResource's own PriorityClasses (``spec.priorityClasses``: soft partitioning).

They are objects of the first state, so they exist as soon as anything runs and gate
nothing. Added by the pipeline like any rendered object, so ``sro render`` prints them,
ownership labels them, the planner deletes one that leaves the spec, and teardown removes
them with the rest. Runs first, before ownership and placement see the objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sro.errors import Location
from sro.hooks import base
from sro.model import desired


def apply(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    classes = ctx.sr.spec.priority_classes
    if not classes or not ctx.recipe.states:
        return list(objects)
    first = ctx.recipe.states[0].name
    extra = []
    for i, pc in enumerate(classes):
        body: dict[str, Any] = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": pc.name},
            "value": pc.value,  # never globalDefault: the API server's default, false, stands
        }
        if pc.description:
            body["description"] = pc.description
        source = Location(file=f"SpecialResource {ctx.sr.name} spec.priorityClasses[{i}]")
        extra.append(desired.DesiredObject(body=body, state=first, source=source, wait=False))
    return [*extra, *objects]
