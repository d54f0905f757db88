"""A recipe's state graph as a mermaid flowchart (``sro render --graph``).

People read an order faster as a picture than as ``after:`` lists, and mermaid renders in
GitHub and most documentation sites without a build step, so the docs' pictures of the
built-in recipes are this output, pasted. The graph is the recipe's own (``recipe.yaml``:
``after``, defaulting to the previous state), with the node labels that record each step,
so the picture also shows how a node's labels progress. Pure: a ``Recipe`` in, text out.
"""

from __future__ import annotations

from sro.render import recipe as recipe_

_COMPLETE = "complete"
_BUILDS = "sro.dev/builds:"
"""A state whose documents carry this annotation builds images (``sro.hooks.builds``)."""


def _node_id(index: int) -> str:
    # Mermaid ids are kept to letters and digits: a state called ``end`` or ``a--b`` would
    # otherwise be read as a keyword or an edge.
    return f"s{index}"


def _label(text: str) -> str:
    return text.replace('"', "#quot;")


def mermaid(recipe: recipe_.Recipe, *, sr_name: str | None = None) -> str:
    """The flowchart: one box per state (``per kernel`` where a document is kernel-affine),
    an arrow from each state it comes after, and a last box for the ``complete`` label
    after the states nothing comes after. Labels are named for ``sr_name`` (default: the
    recipe's name, which is also a SpecialResource's default)."""
    sr = sr_name or recipe.name
    ids = {state.name: _node_id(i) for i, state in enumerate(recipe.states)}
    lines = ["flowchart TD"]
    builds = {state.name for state in recipe.states if any(_BUILDS in doc.text for doc in state.documents)}
    for state in recipe.states:
        per_kernel = any(doc.kernel_affine for doc in state.documents)
        detail = "per kernel group<br/>" if per_kernel else ""
        if state.name in builds:  # not walked on nodes: no label, nothing waits for it
            text = _label(f"{state.name}<br/>{detail}builds a missing image, not walked on nodes")
            lines.append(f'    {ids[state.name]}[/"{text}"/]')
            continue
        text = _label(f"{state.name}<br/>{detail}{sr}.sro.dev/{state.name}=ready")
        lines.append(f'    {ids[state.name]}["{text}"]')
    done = _label(f"{sr}.sro.dev/{_COMPLETE}=true")
    lines.append(f'    done(["{done}"])')
    for state in recipe.states:
        for before in state.after:
            if before not in builds and state.name not in builds:
                lines.append(f"    {ids[before]} --> {ids[state.name]}")
    followed = {before for state in recipe.states for before in state.after}
    for state in recipe.states:
        if state.name not in followed and state.name not in builds:
            lines.append(f"    {ids[state.name]} --> done")
    return "\n".join(lines) + "\n"
