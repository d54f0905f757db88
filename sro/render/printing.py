"""The YAML ``sro render`` prints: every object, a comment header per state, in apply order.

Plain text meant for people and for diffing (the golden files in tests/golden are this
output): each object is preceded by a comment naming it, its source file and line, and
its kernel group or node; a state that renders to nothing says so.
"""

from __future__ import annotations

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
