"""Rendering a recipe's documents into objects, before any hook runs.

The unit of rendering is the document. A kernel-affine one is rendered once per kernel
group with ``kernel`` and ``os`` values; any other once, without them. Each result must
parse as YAML (strictly: no duplicate keys) into one Kubernetes object with apiVersion,
kind and metadata.name, or into nothing at all (a feature switched off with ``{% if %}``).
Errors in rendered YAML name the source file, the document's position in it and the
rendered line, quoted, because the author cannot see the rendered text otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from sro import errors
from sro.model import desired
from sro.render import problems as problems_
from sro.render import recipe as recipe_
from sro.render import templates, values, yamlstrict


def render_documents(
    recipe: recipe_.Recipe,
    inputs: values.Inputs,
    *,
    groups: Iterable[desired.KernelGroup],
    limits: templates.Limits,
    problems: problems_.Problems,
) -> list[desired.DesiredObject]:
    """Every object of every state, in recipe order; errors go to ``problems``."""
    budget = templates.Budget(limits)
    ordered_groups = sorted(set(groups))
    out: list[desired.DesiredObject] = []
    for state in recipe.states:
        base = values.base_values(inputs, state=state.name)
        for doc in state.documents:
            targets: list[desired.KernelGroup | None] = list(ordered_groups) if doc.kernel_affine else [None]
            for group in targets:
                doc_values = base if group is None else {**base, **values.kernel_values(group)}
                try:
                    body = render_one(doc, doc_values, budget=budget)
                except errors.RecipeError as exc:
                    problems.add(exc)
                    if budget.exhausted:  # every later document would fail the same way
                        return out
                    continue
                if body is not None:
                    out.append(
                        desired.DesiredObject(
                            body=body, state=state.name, source=doc.location, kernel_group=group
                        )
                    )
    return out


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
