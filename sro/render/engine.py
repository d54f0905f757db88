"""Rendering a recipe's documents into objects, before any hook runs.

The unit of rendering is the document. A kernel-affine one is rendered once per kernel
group with ``kernel`` and ``os`` values; any other once, without them. Each result must
parse as YAML (strictly: no duplicate keys) into one Kubernetes object with apiVersion,
kind and metadata.name, or into nothing at all (a feature switched off with ``{% if %}``).
Errors in rendered YAML name the source file, the document's position in it and the
rendered line, quoted, because the author cannot see the rendered text otherwise.

A render is handed the documents of the last one (``Memo``) and renders again only what
may differ: when the recipe (the same compiled object), the values other than the
SpecialResource's status (which is no render input, see ``hooks.pipeline.render_inputs``)
and the limits are what they were, a document already rendered for a kernel group is
taken as it was. A kernel change then renders the documents of its new group alone, not
those of every group; what a taken document cost is charged to the budget again, so a
render that a fresh one would refuse for its size is refused here too. Rendered bodies
are never modified once made (``hooks.base.edit``), so they can be shared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from sro import errors
from sro.model import desired
from sro.render import problems as problems_
from sro.render import recipe as recipe_
from sro.render import templates, values, yamlstrict

Slot = tuple[str, errors.Location, desired.KernelGroup | None]
"""A document's render: its state, its source and its kernel group (None: rendered once)."""


@dataclass(frozen=True, kw_only=True)
class Rendered:
    """One document rendered for one slot (None: it rendered to nothing), and what that
    cost the budget: output bytes, work bytes and loop turns."""

    body: dict[str, Any] | None
    output: int
    work: int
    loops: int


@dataclass(frozen=True, kw_only=True)
class Memo:
    """The documents of one render and what they were rendered from (module docstring)."""

    recipe: recipe_.Recipe
    inputs: values.Inputs
    metadata: Mapping[str, Any]  # the SpecialResource's, minus what every write changes
    limits: templates.Limits
    documents: Mapping[Slot, Rendered]

    def serves(self, recipe: recipe_.Recipe, inputs: values.Inputs, limits: templates.Limits) -> bool:
        """Whether a render of ``recipe`` with ``inputs`` would render these documents alike.
        ``values.Inputs`` compares the SpecialResource by its parsed fields alone, so the
        rest of its metadata (labels, annotations, owners) is compared here."""
        return (
            self.recipe is recipe
            and self.limits == limits
            and self.inputs == inputs
            and self.metadata == _metadata(inputs)
        )


_VOLATILE = ("resourceVersion", "managedFields")


def _metadata(inputs: values.Inputs) -> Mapping[str, Any]:
    meta = inputs.sr.body.get("metadata") or {}
    return {k: v for k, v in meta.items() if k not in _VOLATILE}


def render_documents(
    recipe: recipe_.Recipe,
    inputs: values.Inputs,
    *,
    groups: Iterable[desired.KernelGroup],
    limits: templates.Limits,
    problems: problems_.Problems,
    memo: Memo | None = None,
) -> tuple[list[desired.DesiredObject], Memo]:
    """Every object of every state, in recipe order, and the memo of this render; errors
    go to ``problems``. ``memo``: the last render's, whose documents are taken where they
    would render alike (module docstring)."""
    budget = templates.Budget(limits)
    reuse = memo.documents if memo is not None and memo.serves(recipe, inputs, limits) else {}
    made: dict[Slot, Rendered] = {}
    ordered_groups = sorted(set(groups))
    out: list[desired.DesiredObject] = []
    for state in recipe.states:
        base: dict[str, Any] | None = None  # built on the first document rendered again
        for doc in state.documents:
            targets: list[desired.KernelGroup | None] = list(ordered_groups) if doc.kernel_affine else [None]
            for group in targets:
                slot = (state.name, doc.location, group)
                rendered = reuse.get(slot)
                if rendered is None or not _charge(budget, rendered):
                    if base is None:
                        base = values.base_values(inputs, state=state.name)
                    doc_values = base if group is None else {**base, **values.kernel_values(group)}
                    output, work, loops = budget.bytes_left, budget.work_left, budget.loops_left
                    try:
                        body = render_one(doc, doc_values, budget=budget)
                    except errors.RecipeError as exc:
                        problems.add(exc)
                        if budget.exhausted:  # every later document would fail the same way
                            return out, _memo(recipe, inputs, limits, made)
                        continue
                    rendered = Rendered(
                        body=body,
                        output=output - budget.bytes_left,
                        work=work - budget.work_left,
                        loops=loops - budget.loops_left,
                    )
                made[slot] = rendered
                if rendered.body is not None:
                    out.append(
                        desired.DesiredObject(
                            body=rendered.body, state=state.name, source=doc.location, kernel_group=group
                        )
                    )
    return out, _memo(recipe, inputs, limits, made)


def _memo(
    recipe: recipe_.Recipe, inputs: values.Inputs, limits: templates.Limits, made: Mapping[Slot, Rendered]
) -> Memo:
    return Memo(recipe=recipe, inputs=inputs, metadata=_metadata(inputs), limits=limits, documents=made)


def _charge(budget: templates.Budget, rendered: Rendered) -> bool:
    """Charge a taken document's cost; False (nothing charged) when the budget cannot
    pay it: the document is rendered again and fails as a fresh render would."""
    if (
        rendered.output > budget.bytes_left
        or rendered.work > budget.work_left
        or rendered.loops > budget.loops_left
    ):
        return False
    budget.bytes_left -= rendered.output
    budget.work_left -= rendered.work
    budget.loops_left -= rendered.loops
    return True


def render_one(
    doc: recipe_.Document, doc_values: Mapping[str, Any], *, budget: templates.Budget
) -> dict[str, Any] | None:
    """Render and parse one document; None when it renders to nothing.

    Values take their place in the parsed YAML (``sro.render.placeholders``), so no value
    can change a document's structure; parsing counts against the render's time.
    """
    rendered = doc.compiled.render_tokens(doc_values, budget=budget)
    where = f"document {doc.index}"
    try:
        body = yamlstrict.parse(rendered.text, deadline=budget.deadline, substitution=rendered.table)
    except yamlstrict.TooSlow:
        raise errors.TemplateError(
            f"{where}: rendering took longer than {budget.limits.seconds:g}s (parsing its YAML)",
            location=doc.location,
        ) from None
    except yaml.MarkedYAMLError as exc:
        line = yamlstrict.error_line(exc)
        lines = rendered.text.splitlines()
        quoted = rendered.table.expand(lines[line - 1]).rstrip() if 0 < line <= len(lines) else ""
        raise errors.RecipeInvalid(
            f"{where}: rendered YAML is invalid at rendered line {line} ({quoted!r}): "
            f"{yamlstrict.describe(exc).removeprefix('invalid YAML: ')}",
            location=doc.location,
        ) from None
    except yaml.YAMLError as exc:
        message, line = yamlstrict.explain(exc, rendered.text)
        raise errors.RecipeInvalid(
            f"{where}: rendered YAML is invalid at rendered line {line}: "
            f"{message.removeprefix('invalid YAML: ')}",
            location=doc.location,
        ) from None
    if body is None:
        return None
    check_object(body, location=doc.location, where=where, metadata_at=line_of(doc, "metadata:"))
    return dict(body)


def line_of(doc: recipe_.Document, needle: str) -> errors.Location:
    """The first line of ``doc``'s source containing ``needle`` (the document's first line if none)."""
    for offset, line in enumerate(doc.text.splitlines()):
        if needle in line:
            return errors.Location(file=doc.location.file, line=doc.location.line + offset)
    return doc.location


def check_object(
    body: Any, *, location: errors.Location, where: str, metadata_at: errors.Location | None = None
) -> None:
    """A rendered document is one Kubernetes object with apiVersion, kind and metadata.name."""
    if not isinstance(body, Mapping):
        raise errors.RecipeInvalid(
            f"{where}: must render to one Kubernetes object (a mapping), not a {type(body).__name__}",
            location=location,
        )
    for key in ("apiVersion", "kind"):
        if not isinstance(body.get(key), str) or not body[key]:
            raise errors.RecipeInvalid(f"{where}: object has no {key}", location=location)
    meta = body.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise errors.RecipeInvalid(
            f"{where}: {body['kind']} has no metadata.name", location=metadata_at or location
        )
    for field in ("labels", "annotations"):
        entries = meta.get(field)
        if entries is None:
            continue
        if not isinstance(entries, Mapping) or not all(isinstance(v, str) for v in entries.values()):
            raise errors.RecipeInvalid(
                f'{where}: metadata.{field} must map keys to strings (quote "true")',
                location=metadata_at or location,
            )
