"""YAML parsing that refuses what PyYAML silently accepts, with file:line in every error.

PyYAML keeps the last of two equal keys, so a recipe with ``nodeSelector`` written twice
would lose one without a word; this loader raises instead. Errors become ``RecipeInvalid``
pointing at the line in the file (``line_offset`` maps a document back into its file).

Text comes from recipe authors and, through templates, from tenants, so the loader is
bounded in work and in what it hands on:

* merge keys (``<<``) are refused: flattening them copies every merged mapping, doubling
  per level (a few dozen lines take all memory), and no Kubernetes object needs them;
* aliases may share a value, but the value as later code sees it (copies, JSON, hashes
  expand every alias) may have at most ``MAX_NODES`` nodes and ``MAX_DEPTH`` levels;
  both are measured once per distinct value (memoised by identity), so a billion-laughs
  document is refused in time linear in its text;
* nesting is bounded before any recursive step can overflow, in both parsers.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError

from sro import errors


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that treats a duplicate mapping key as an error."""


MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct_mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    for key_node, _ in node.value:
        if key_node.tag == MERGE_TAG:
            raise ConstructorError(
                None, None, "merge keys (<<) are not supported: write the keys out", key_node.start_mark
            )
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


MAX_NODES = 100_000
"""Most nodes (mappings, lists, scalars) a document may expand to, aliases expanded:
a large DaemonSet has a few hundred; the bound stops alias bombs."""


class TooDeep(yaml.YAMLError):
    """The document nests deeper than MAX_DEPTH."""


class TooLarge(yaml.YAMLError):
    """The document, aliases expanded, has more than MAX_NODES nodes."""


def _check_depth(value: Any) -> None:
    """Refuse ``value`` if, aliases expanded, it nests deeper than ``MAX_DEPTH`` or has more
    than ``MAX_NODES`` nodes; each distinct container is measured once (post-order,
    iterative, memoised by identity), so shared values cost nothing more."""
    size: dict[int, int] = {}
    height: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, expanded = stack.pop()
        if not isinstance(item, dict | list) or (id(item) in size and not expanded):
            continue
        children = [
            c for c in (item.values() if isinstance(item, dict) else item) if isinstance(c, dict | list)
        ]
        if not expanded:
            if len(stack) > MAX_DEPTH * 4 + len(children) + MAX_NODES:  # a cycle or a runaway
                raise TooLarge(f"more than {MAX_NODES} nodes")
            size[id(item)] = -1  # in progress: a cycle through an alias meets it
            stack.append((item, True))
            for child in children:
                if size.get(id(child)) == -1:
                    raise TooDeep("a value contains itself (a recursive alias)")
                stack.append((child, False))
            continue
        leaves = len(item) - len(children)
        size[id(item)] = 1 + leaves + sum(size[id(c)] for c in children)
        height[id(item)] = 1 + max((height[id(c)] for c in children), default=0)
        if height[id(item)] > MAX_DEPTH:
            raise TooDeep(f"nested deeper than {MAX_DEPTH} levels")
        if size[id(item)] > MAX_NODES:
            raise TooLarge(f"more than {MAX_NODES} nodes once its aliases are expanded")


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
        except RecursionError:
            raise TooDeep(f"nested deeper than {MAX_DEPTH} levels") from None
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
