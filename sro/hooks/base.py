"""What a hook is and what it sees.

A hook is a pure function from the rendered objects of a recipe to new objects, plus the
annotation it answers to (if any) and a check of that annotation's value. Hooks never
modify the objects they are given: they return edited copies (``edit``). The order in
which hooks run is ``registry.HOOKS``; the context is the same for all of them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sro import errors
from sro.model import desired, recipe_policy, views
from sro.model import specialresource as srmodel
from sro.render import kinds, values
from sro.render import problems as problems_
from sro.render import recipe as recipe_

CopiesKey = tuple[errors.Location, desired.KernelGroup | None, str, str]
"""A first per-node pod: its source, kernel group, node and name."""


@dataclass(frozen=True, kw_only=True)
class Context:
    """Everything hooks may read about one render."""

    sr: srmodel.SpecialResource
    recipe: recipe_.Recipe
    node_selector: Mapping[str, str]  # the effective one: the SR's, else the recipe's
    nodes: tuple[views.NodeView, ...]  # selected nodes, sorted by name
    groups: Mapping[str, desired.KernelGroup]  # node name -> its kernel group
    proxy: values.ProxySettings
    is_namespaced: kinds.IsNamespaced
    is_served: kinds.IsServed
    problems: problems_.Problems
    texts: Mapping[errors.Location, str] = dataclasses.field(default_factory=dict)  # document sources
    keep_off: frozenset[str] = frozenset()  # nodes an earlier SpecialResource of the recipe keeps
    policy: recipe_policy.RecipePolicy = recipe_policy.DEFAULT  # what the recipe may create
    copies: dict[CopiesKey, Any] = dataclasses.field(default_factory=dict)
    """The per-node pods still to stamp once the hooks have run (``per_node.expand``), by
    their first pod: the one thing written to during a render."""
    last: Sequence[desired.DesiredObject] = ()
    """The objects of the last render of the same SpecialResource, if any: ``per_node.expand``
    takes a template's pods from there when its first pod is what it was then."""

    def locate(self, obj: desired.DesiredObject, needle: str) -> errors.Location:
        """The line of ``obj``'s source document that first contains ``needle`` (else its first line)."""
        text = self.texts.get(obj.source, "")
        for offset, line in enumerate(text.splitlines()):
            if needle in line:
                return errors.Location(file=obj.source.file, line=obj.source.line + offset)
        return obj.source

    def members(self, group: desired.KernelGroup) -> list[views.NodeView]:
        """Selected nodes in ``group``, by name."""
        return list(self._members.get(group, ()))

    @functools.cached_property
    def _members(self) -> Mapping[desired.KernelGroup, tuple[views.NodeView, ...]]:
        # Once per render: every kernel-affine object asks for its group's members, and a
        # walk of every node per object grew with nodes x kernel groups.
        found: dict[desired.KernelGroup, list[views.NodeView]] = {}
        for n in self.nodes:
            group = self.groups.get(n.name)
            if group is not None:
                found.setdefault(group, []).append(n)
        return {group: tuple(members) for group, members in found.items()}

    def after(self, state: str) -> tuple[str, ...]:
        return self.recipe.state(state).after


Check = Callable[[str], "str | None"]
"""An annotation value -> why it is invalid, or None."""
Apply = Callable[[Sequence[desired.DesiredObject], Context], list[desired.DesiredObject]]


def check_bool(value: str) -> str | None:
    return None if value in ("true", "false") else 'must be "true" or "false"'


@dataclass(frozen=True, kw_only=True)
class Hook:
    """One step of the pipeline; ``annotation`` is its key under ``sro.dev/`` ("" for none)."""

    name: str
    apply: Apply
    annotation: str = ""
    check: Check = check_bool


def edit(obj: desired.DesiredObject, **changes: Any) -> tuple[desired.DesiredObject, dict[str, Any]]:
    """A copy of ``obj`` with a body the caller may modify, and that body."""
    body = plain_copy(dict(obj.body))
    return dataclasses.replace(obj, body=body, **changes), body


def edit_at(
    obj: desired.DesiredObject, *paths: tuple[str, ...], **changes: Any
) -> tuple[desired.DesiredObject, dict[str, Any]]:
    """``edit`` that copies only where the caller writes: the body and each mapping along
    each of ``paths`` are copied one level deep; everything else is shared with
    ``obj.body``. The caller may set and remove keys of those mappings (and create what a
    path is missing), and must replace, never modify, any other value in the body. A hook
    that stamps thousands of per-node pods then copies a few small mappings per pod, not
    the whole pod: rendered bodies are never modified in place once made, so what is
    shared stays as it was."""
    body = dict(obj.body)
    fresh = {id(body)}
    for path in paths:
        node = body
        for key in path:
            child = node.get(key)
            if not isinstance(child, dict):
                break  # missing: the caller creates it, inside a mapping already copied
            if id(child) not in fresh:
                child = node[key] = dict(child)
                fresh.add(id(child))
            node = child
    return dataclasses.replace(obj, body=body, **changes), body


def plain_copy(value: Any) -> Any:
    """A deep copy of JSON-like data (dicts, lists, scalars): several times faster than
    ``copy.deepcopy``, which matters with a per-node Pod for each of thousands of nodes."""
    if isinstance(value, dict):
        return {k: plain_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_copy(v) for v in value]
    return value


def metadata(body: dict[str, Any]) -> dict[str, Any]:
    meta = body.setdefault("metadata", {})
    assert isinstance(meta, dict)
    return meta


def sub(mapping: dict[str, Any], key: str) -> dict[str, Any]:
    """``mapping[key]`` as a dict, created (or replaced when null) if needed."""
    value = mapping.get(key)
    if not isinstance(value, dict):
        value = mapping[key] = {}
    return value
