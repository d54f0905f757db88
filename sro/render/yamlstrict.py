"""YAML parsing that refuses what PyYAML silently accepts, with file:line in every error.

PyYAML keeps the last of two equal keys, so a recipe with ``nodeSelector`` written twice
would lose one without a word; this loader raises instead. Errors become ``RecipeInvalid``
pointing at the line in the file (``line_offset`` maps a document back into its file).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError

from sro import errors


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that treats a duplicate mapping key as an error."""


def _construct_mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:  # an unhashable key; the base constructor reports it
            duplicate = False
        if duplicate:
            first = seen[key].start_mark.line + 1
            raise ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {first})", key_node.start_mark
            )
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

_CBase: type[Any] | None = getattr(yaml, "CSafeLoader", None)
_FastLoader: type[Any] | None = None
if _CBase is not None:
    # libyaml's parser with the same strict constructor: several times faster on valid text.
    _FastLoader = type("_FastStrictLoader", (_CBase,), {})
    _FastLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


MAX_DEPTH = 100
"""Deeper data is refused: nothing in Kubernetes nests so far, and later recursive code
(copies, merges) must never hit Python's recursion limit on text a user controls."""


class TooDeep(yaml.YAMLError):
    """The document nests deeper than MAX_DEPTH."""


def _check_depth(value: Any) -> None:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise TooDeep(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def _bracket_depth(text: str) -> int:
    """Deepest nesting of flow brackets, counted roughly (quotes are not parsed)."""
    depth = deepest = 0
    for char in text:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(0, depth - 1)
    return deepest


def parse(text: str) -> Any:
    """Parse one YAML document strictly; errors are PyYAML's own, whichever parser ran.

    Valid text goes through libyaml when it is available; invalid text is parsed again by
    the pure-Python parser so messages are the same on every installation.
    """
    if _FastLoader is not None:
        try:
            value = yaml.load(text, Loader=_FastLoader)
        except yaml.YAMLError:
            pass
        else:
            _check_depth(value)
            return value
    if _bracket_depth(text) > MAX_DEPTH:  # the pure parser would recurse for seconds
        raise TooDeep(f"nested deeper than {MAX_DEPTH} levels")
    try:
        value = yaml.load(text, Loader=StrictLoader)
    except RecursionError:
        raise TooDeep(f"nested deeper than {MAX_DEPTH} levels") from None
    _check_depth(value)
    return value


def load(text: str, *, file: str, line_offset: int = 0) -> Any:
    """Parse one YAML document; errors name ``file`` and the line (``line_offset`` + line)."""
    try:
        return parse(text)
    except yaml.MarkedYAMLError as exc:
        raise errors.RecipeInvalid(
            describe(exc), location=errors.Location(file=file, line=line_offset + error_line(exc))
        ) from None
    except yaml.YAMLError as exc:
        raise errors.RecipeInvalid(
            f"invalid YAML: {exc}", location=errors.Location(file=file, line=line_offset + 1)
        ) from None


def error_line(exc: yaml.MarkedYAMLError) -> int:
    """1-based line of a YAML error within the text parsed."""
    mark = exc.problem_mark or exc.context_mark
    return (mark.line + 1) if mark is not None else 1


def describe(exc: yaml.MarkedYAMLError) -> str:
    """The cause of a YAML error without PyYAML's multi-line position dump."""
    parts = [p for p in (exc.context, exc.problem) if p]
    return "invalid YAML: " + ", ".join(parts) if parts else "invalid YAML"
