"""The YAML ``sro render`` prints: every object, a comment header per state, in apply order.

Plain text meant for people and for diffing (the golden files in tests/golden are this
output): each object is preceded by a comment naming it, its source file and line, and
its kernel group or node; a state that renders to nothing says so. ``format_json`` gives
the same objects as one kubectl ``List``, and ``select`` narrows a result to some states
or to what one node gets (``sro render --state``, ``--node``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

import yaml

from sro.model import desired
from sro.render import recipe as recipe_


def format_desired(result: desired.DesiredState, *, recipe: recipe_.Recipe) -> str:
    """The objects as multi-document YAML, a comment header per state, in apply order."""
    groups = sorted(set(result.kernel_groups.values()))
    lines = [
        f"# sro render: SpecialResource {result.sr_name}, "
        f"recipe {recipe.name} ({recipe.source}: {recipe.origin})",
        f"# namespace {result.namespace}; {len(result.nodes)} selected node(s); "
        f"{len(groups)} kernel group(s): " + (", ".join(g.key for g in groups) or "none"),
    ]
    for state in result.states:
        objects = result.objects_of(state.name)
        after = ", ".join(state.after) or "-"
        lines.append(
            f"# ===== state {state.name} (after: {after}): {len(objects)} object(s)"
            + ("; renders to nothing, complete at once" if not objects else "")
        )
        for obj in objects:
            extra = f" kernel {obj.kernel_group.key}" if obj.kernel_group else ""
            extra += f" node {obj.node}" if obj.node else ""
            lines.append("---")
            lines.append(f"# {obj.ref} from {obj.source}{extra}")
            lines.append(
                yaml.safe_dump(dict(obj.body), sort_keys=False, default_flow_style=False, width=100).rstrip(
                    "\n"
                )
            )
    return "\n".join(lines) + "\n"


def format_json(result: desired.DesiredState) -> str:
    """The objects as one kubectl-style ``List`` (``kubectl apply -f -`` takes it), in apply order."""
    items = [dict(obj.body) for state in result.states for obj in result.objects_of(state.name)]
    return json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}, indent=2) + "\n"


def refused_filter(result: desired.DesiredState, *, states: Sequence[str], node: str | None) -> str | None:
    """Why ``--state``/``--node`` name nothing in ``result`` (a state the recipe lacks, a node
    not selected), or None."""
    names = [s.name for s in result.states]
    for state in states:
        if state not in names:
            return f"no state {state!r} in recipe {result.recipe} (states: {', '.join(names)})"
    if node is not None and node not in result.nodes:
        shown = ", ".join(result.nodes[:10]) + (", ..." if len(result.nodes) > 10 else "")
        return f"node {node!r} is not selected ({len(result.nodes)} selected: {shown or 'none'})"
    return None


def select(
    result: desired.DesiredState, *, states: Sequence[str] = (), node: str | None = None
) -> desired.DesiredState:
    """Only the objects of ``states`` (every state when empty) that ``node`` gets (every
    node's when None): its own per-node objects, its kernel group's, and the shared ones."""
    group = result.kernel_groups.get(node) if node is not None else None

    def wanted(obj: desired.DesiredObject) -> bool:
        if states and obj.state not in states:
            return False
        if node is None:
            return True
        if obj.node is not None:
            return obj.node == node
        return obj.kernel_group is None or obj.kernel_group == group

    return dataclasses.replace(
        result,
        states=tuple(s for s in result.states if not states or s.name in states),
        objects=tuple(o for o in result.objects if wanted(o)),
        nodes=result.nodes if node is None else (node,),
        kernel_groups=result.kernel_groups if node is None else ({node: group} if group is not None else {}),
    )
