"""YAML parsing that refuses what PyYAML silently accepts, with file:line in every error.

PyYAML keeps the last of two equal keys, so a recipe with ``nodeSelector`` written twice
would lose one without a word; this loader raises instead. Errors become ``RecipeInvalid``
pointing at the line in the file (``line_offset`` maps a document back into its file).

Text comes from recipe authors and, through templates, from tenants, so the loader is
bounded in work and in what it hands on, and every bound fails as a YAML error with
the line where it was met (``load`` makes it ``RecipeInvalid``):

* the text is at most ``MAX_DOCUMENT_CHARS`` long;
* nesting is counted while the node tree is composed, from the parser's events, so it
  stops at ``MAX_DEPTH`` before any recursive step could overflow (in both parsers);
* merge keys (``<<``) are refused: flattening them copies every merged mapping, doubling
  per level (a few dozen lines take all memory), and no Kubernetes object needs them;
* aliases may share a value, but the value as later code sees it (copies, JSON, hashes
  expand every alias) may have at most ``MAX_NODES`` nodes and ``MAX_DEPTH`` levels;
  both are measured once per distinct value (memoised by identity), so a billion-laughs
  document is refused in time linear in its text;
* a value only JSON can carry comes out: timestamps stay the text written, numbers are
  at most ``MAX_NUMBER_CHARS`` long, ``!!binary``/``!!set``/``!!omap``/``!!pairs`` are
  refused, and a tag that cannot build its value is an error at its line.

libyaml's parser is used when it is installed (several times faster), feeding the same
bounded composer and constructor; text it refuses is parsed again by the pure-Python
parser so messages are the same on every installation. Flow brackets nested past
libyaml's own bound are the exception: they are too deep for ours as well, so that refusal
is ours at once (the pure-Python scanner is quadratic in open brackets).
"""

from __future__ import annotations

import time
from typing import Any, Protocol, cast

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.resolver import Resolver

from sro import errors

MAX_DOCUMENT_CHARS = 2 * 1024 * 1024
"""Longest YAML text parsed, in characters (2 MiB; the API server refuses objects over
1.5 MiB). Error: ``invalid YAML: longer than 2097152 characters``."""
MAX_DEPTH = 100
"""Deepest nesting, counted while composing and again with aliases expanded: nothing in
Kubernetes nests so far, and later recursive code (copies, merges) must never meet
Python's recursion limit on text a user controls. Error: ``nested deeper than 100 levels``."""
_TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"
MAX_NODES = 100_000
"""Most nodes (mappings, lists, scalars) a document may have, aliases expanded: a large
DaemonSet has a few hundred. Errors: ``more than 100000 nodes``, ``more than 100000 nodes
once its aliases are expanded``."""
MAX_NUMBER_CHARS = 100
"""Longest number (int or float, with sexagesimal ``1:20`` forms, whose conversion is
quadratic). Error: ``a number of more than 100 characters``."""
TIME_CHECK_EVERY = 512
"""Nodes composed between two looks at the deadline a caller passed."""
MERGE_TAG = "tag:yaml.org,2002:merge"
LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"
"""What libyaml's scanner says of flow brackets nested past its bound of 1,000 levels."""


class TooDeep(yaml.MarkedYAMLError):
    """The document nests deeper than MAX_DEPTH."""


class TooLarge(yaml.MarkedYAMLError):
    """The document is longer than MAX_DOCUMENT_CHARS or has more than MAX_NODES nodes."""


class TooSlow(yaml.YAMLError):
    """Parsing went past the caller's deadline."""


class Substitution(Protocol):
    """What replaces placeholders in scalars (``sro.render.placeholders.Table``)."""

    marker: str

    def scalar(self, text: str, *, plain: bool) -> Any: ...


class _Bounded(Composer):
    """The composer with nesting, size and time bounds, and the strict constructors' state."""

    deadline: float | None = None
    substitution: Substitution | None = None
    _depth = 0
    _nodes = 0

    def _mark(self) -> Any:
        return cast(Any, self).peek_event().start_mark  # the parser's, mixed in beside this class

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if self._depth >= MAX_DEPTH:
            raise TooDeep(None, None, _TOO_DEEP, self._mark())
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise TooLarge(None, None, f"more than {MAX_NODES} nodes", self._mark())
        if (
            self.deadline is not None
            and self._nodes % TIME_CHECK_EVERY == 0
            and time.monotonic() > self.deadline
        ):
            raise TooSlow("parsing took too long")
        self._depth += 1
        try:
            return cast(yaml.Node, super().compose_node(parent, index))
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)  # type: ignore[misc]
        except (ValueError, TypeError, ArithmeticError, LookupError, AttributeError) as exc:
            raise ConstructorError(None, None, f"cannot read this value: {exc}", node.start_mark) from None


class StrictLoader(_Bounded, yaml.SafeLoader):
    """SafeLoader with the bounds above, duplicate keys refused and JSON values only."""


_CParser: type[Any] | None = getattr(getattr(yaml, "_yaml", None), "CParser", None)


class _FastLoaderBase(_Bounded):
    """libyaml's scanner and parser under the same composer and constructor."""


_FastLoader: type[Any] | None = None
if _CParser is not None:

    def _fast_init(self: Any, stream: str) -> None:
        cast(Any, _CParser).__init__(self, stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)

    _FastLoader = type(
        "_FastStrictLoader", (_FastLoaderBase, _CParser, SafeConstructor, Resolver), {"__init__": _fast_init}
    )


def _construct_mapping(loader: _Bounded, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    for key_node, _ in node.value:
        if key_node.tag == MERGE_TAG:
            raise ConstructorError(
                None, None, "merge keys (<<) are not supported: write the keys out", key_node.start_mark
            )
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
    return SafeConstructor.construct_mapping(loader, node, deep=deep)  # type: ignore[arg-type]


def _construct_str(loader: _Bounded, node: yaml.ScalarNode) -> Any:
    text = node.value
    substitution = loader.substitution
    if substitution is not None and substitution.marker in text:
        return substitution.scalar(text, plain=not node.style)  # libyaml says '' for plain
    return text


def _number(base: Any) -> Any:
    def construct(loader: _Bounded, node: yaml.ScalarNode) -> Any:
        if len(node.value) > MAX_NUMBER_CHARS:
            raise ConstructorError(
                None, None, f"a number of more than {MAX_NUMBER_CHARS} characters", node.start_mark
            )
        return base(loader, node)

    return construct


def _timestamp(loader: _Bounded, node: yaml.ScalarNode) -> str:
    return str(node.value)  # JSON has no timestamps: the text stays as written


def _refuse(loader: _Bounded, node: yaml.Node) -> Any:
    raise ConstructorError(None, None, f"{node.tag} values are not allowed (not JSON)", node.start_mark)


_TAG = "tag:yaml.org,2002:"
_loaders: list[Any] = [StrictLoader, _FastLoader]
for _loader in _loaders:
    if _loader is None:
        continue
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _loader.add_constructor(_TAG + "str", _construct_str)
    _loader.add_constructor(_TAG + "int", _number(SafeConstructor.construct_yaml_int))
    _loader.add_constructor(_TAG + "float", _number(SafeConstructor.construct_yaml_float))
    _loader.add_constructor(_TAG + "timestamp", _timestamp)
    for _tag in ("binary", "set", "omap", "pairs"):
        _loader.add_constructor(_TAG + _tag, _refuse)


def _check_expanded(value: Any) -> None:
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
            size[id(item)] = -1  # in progress: a cycle through an alias meets it
            stack.append((item, True))
            for child in children:
                if size.get(id(child)) == -1:
                    raise yaml.YAMLError("a value contains itself (a recursive alias)")
                stack.append((child, False))
            continue
        leaves = len(item) - len(children)
        size[id(item)] = 1 + leaves + sum(size[id(c)] for c in children)
        height[id(item)] = 1 + max((height[id(c)] for c in children), default=0)
        if height[id(item)] > MAX_DEPTH:
            raise yaml.YAMLError(f"{_TOO_DEEP} once its aliases are expanded")
        if size[id(item)] > MAX_NODES:
            raise yaml.YAMLError(f"more than {MAX_NODES} nodes once its aliases are expanded")


def _run(
    loader_class: type[Any], text: str, *, deadline: float | None, substitution: Substitution | None
) -> Any:
    loader = loader_class(text)
    loader.deadline = deadline
    loader.substitution = substitution
    try:
        return loader.get_single_data()
    except RecursionError:  # cannot happen with the composer's bound; never let it escape
        raise yaml.YAMLError(_TOO_DEEP) from None
    finally:
        loader.dispose()


def parse(text: str, *, deadline: float | None = None, substitution: Substitution | None = None) -> Any:
    """Parse one YAML document strictly; errors are YAML errors, whichever parser ran.

    ``deadline`` (``time.monotonic()``) bounds the time spent (``TooSlow``);
    ``substitution`` gives scalars holding its marker their values.
    """
    if len(text) > MAX_DOCUMENT_CHARS:
        raise yaml.YAMLError(f"longer than {MAX_DOCUMENT_CHARS} characters")
    value: Any = None
    if _FastLoader is not None:
        try:
            value = _run(_FastLoader, text, deadline=deadline, substitution=substitution)
        except (TooDeep, TooLarge, TooSlow):
            raise
        except yaml.YAMLError as exc:
            if isinstance(exc, yaml.MarkedYAMLError) and LIBYAML_TOO_DEEP in (exc.problem or ""):
                # libyaml's own nesting bound (1,000) is past ours: the text nests too deep,
                # and the pure-Python scanner would take a second to say so (quadratic in
                # open flow brackets), on every version of a hostile recipe it is handed.
                raise TooDeep(None, None, _TOO_DEEP, exc.problem_mark) from None
            value = _run(StrictLoader, text, deadline=deadline, substitution=substitution)
    else:
        value = _run(StrictLoader, text, deadline=deadline, substitution=substitution)
    _check_expanded(value)
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
        message, line = explain(exc, text)
        raise errors.RecipeInvalid(
            message, location=errors.Location(file=file, line=line_offset + line)
        ) from None


def error_line(exc: yaml.MarkedYAMLError) -> int:
    """1-based line of a YAML error within the text parsed."""
    mark = exc.problem_mark or exc.context_mark
    return (mark.line + 1) if mark is not None else 1


def describe(exc: yaml.MarkedYAMLError) -> str:
    """The cause of a YAML error without PyYAML's multi-line position dump."""
    parts = [p for p in (exc.context, exc.problem) if p]
    return "invalid YAML: " + ", ".join(parts) if parts else "invalid YAML"


def explain(exc: yaml.YAMLError, text: str) -> tuple[str, int]:
    """One line saying what is wrong with ``text`` and the 1-based line it is on, for any
    YAML error (PyYAML's own text spans lines: a position dump, a reader's "in <string>")."""
    if isinstance(exc, yaml.MarkedYAMLError):
        return describe(exc), error_line(exc)
    if isinstance(exc, yaml.reader.ReaderError):
        char = exc.character
        code = ord(char) if isinstance(char, str) else int(char)
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        return f"invalid YAML: unacceptable character #x{code:04x}: {exc.reason}", line
    return "invalid YAML: " + " ".join(str(exc).split()), 1
