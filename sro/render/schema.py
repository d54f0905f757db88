"""A recipe's ``values.schema.json``: the JSON Schema the merged ``set`` values must satisfy.

Templates read ``set`` with ``StrictUndefined``, so a missing value fails the render, but
a misspelt key (``driverImag``) or a number where a string belongs renders quietly into
something wrong. A recipe that ships a schema says which keys and types it takes; lint,
render and the operator check the merged values against it before rendering, through
``sro.hooks.pipeline``, so all three refuse the same SpecialResources.

The schema comes from the recipe's author and the values from the SpecialResource's,
who may be someone else, so evaluation is bounded like a render:

- the file is at most ``recipe.MAX_FILE_BYTES``, with at most ``MAX_NODES`` values nested
  at most ``MAX_DEPTH`` levels;
- patterns (``pattern``, ``patternProperties``) are RE2, matched in linear time
  (``sro.model.logpattern``): Python's ``re`` backtracks for ever on ``(a+)+$``;
- references stay inside the file (nothing is fetched), and the keywords whose cost
  grows with every subschema evaluated beside them (``unevaluatedProperties``,
  ``unevaluatedItems``, dynamic references) are refused;
- ``uniqueItems`` compares canonical forms in a set, not every pair;
- ``$schema`` is read only at the top level (a subschema naming one would make jsonschema
  evaluate it with its own, unbounded validator), and the schema is evaluated as draft
  2020-12;
- every keyword evaluated checks a ``budget.Budget`` of ``SECONDS``, so a schema that
  recurses through ``$ref`` without descending stops there, and at most ``MAX_REPORTED``
  violations are collected.
"""

from __future__ import annotations

import functools
import json
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators
import referencing.exceptions

from sro import errors
from sro.model import logpattern
from sro.render import budget

SCHEMA_FILE = "values.schema.json"
MAX_DEPTH = 64
"""Deepest nesting of the schema document; real schemas are a few levels deep."""
MAX_NODES = 5000
"""Most JSON values (objects, arrays, scalars) in the schema document; the built-in
recipes' schemas have a few hundred. Checking a schema against the JSON Schema
meta-schema (once per recipe version, off the event loop) costs about 0.1 ms per value."""
SECONDS = 1.0
"""Time one check of the values may take; a real schema takes milliseconds."""
MAX_REPORTED = 10
"""Violations reported for one SpecialResource; the first ones by path."""
_REFUSED = {
    "unevaluatedProperties": "unevaluatedProperties is not supported (use additionalProperties)",
    "unevaluatedItems": "unevaluatedItems is not supported (use items)",
    "$dynamicRef": "$dynamicRef is not supported",
    "$recursiveRef": "$recursiveRef is not supported",
}


@dataclass(frozen=True, kw_only=True)
class Violation:
    """One way the values break the schema: where (a path into ``set``) and what."""

    path: tuple[str | int, ...]
    message: str

    @property
    def dotted(self) -> str:
        """``driver.image`` or ``devices[2]``: the path as a template would read it."""
        out = ""
        for part in self.path:
            out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
        return out


@dataclass(frozen=True, kw_only=True)
class ValuesSchema:
    """A checked schema, ready to validate values from any thread."""

    file: str  # where it was read, as messages name it
    document: Mapping[str, Any] = field(repr=False)
    _validator: Any = field(repr=False, compare=False)

    def violations(self, values: Mapping[str, Any]) -> list[Violation]:
        """How ``values`` break the schema (none when they satisfy it), first paths first."""
        token = budget.activate(budget.Budget(budget.Limits(seconds=SECONDS)))
        try:
            found = [_violation(e) for e in islice(self._validator.iter_errors(values), MAX_REPORTED)]
        except budget.OverBudget:
            found = [Violation(path=(), message=f"checking the values took longer than {SECONDS:g}s")]
        except RecursionError:
            found = [Violation(path=(), message="the schema refers to itself without end")]
        except referencing.exceptions.Unresolvable as exc:  # load() checks every $ref; never quiet
            found = [Violation(path=(), message=f"the schema's reference {exc} cannot be followed")]
        finally:
            budget.deactivate(token)
        return sorted(found, key=lambda v: [str(p) for p in v.path])


def load(text: str, *, file: str) -> ValuesSchema:
    """Parse and check a ``values.schema.json``; ``RecipeInvalid`` naming the file (and line)."""
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise errors.RecipeInvalid(
            f"not valid JSON: {exc.msg}", location=errors.Location(file=file, line=exc.lineno)
        ) from None
    except _Duplicate as exc:
        raise errors.RecipeInvalid(f"duplicate key {exc}", location=errors.Location(file=file)) from None
    except RecursionError:
        raise errors.RecipeInvalid(
            f"nested deeper than {MAX_DEPTH} levels", location=errors.Location(file=file)
        ) from None
    where = errors.Location(file=file)
    if not isinstance(document, dict):
        raise errors.RecipeInvalid("must be a JSON object (a JSON Schema)", location=where)
    depth, nodes = _measure(document)
    if depth > MAX_DEPTH:
        raise errors.RecipeInvalid(f"nested deeper than {MAX_DEPTH} levels", location=where)
    if nodes > MAX_NODES:
        raise errors.RecipeInvalid(f"more than {MAX_NODES} JSON values", location=where)
    invalid = next(iter(_META.iter_errors(document)), None)
    if invalid is not None:
        at = "/".join(str(p) for p in invalid.absolute_path) or "the top level"
        why = f"not a valid JSON Schema at {at}: {_short(invalid.message)}"
        raise errors.RecipeInvalid(why, location=where)
    problem = _refused(document)
    if problem:
        raise errors.RecipeInvalid(problem, location=where)
    # Evaluated as draft 2020-12 by the bounded validator whatever $schema says: jsonschema
    # would switch to its own validator class (Python's re, no budget) for a schema naming one.
    root = {k: v for k, v in document.items() if k != "$schema"}
    return ValuesSchema(file=file, document=document, _validator=_VALIDATOR(root))


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(repr(key))
        out[key] = value
    return out


def _measure(value: Any) -> tuple[int, int]:
    """Nesting depth and number of values of a JSON document, without recursion; stops
    counting past either bound."""
    deepest, count, stack = 0, 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest, count = max(deepest, depth), count + 1
        if depth > MAX_DEPTH or count > MAX_NODES:
            break
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children)
    return deepest, count


def _refused(document: dict[str, Any]) -> str | None:
    """Why the (already meta-validated) schema cannot be evaluated in bounded time, or None.

    Every object of the document is looked at, not only those in schema positions: a
    ``$ref`` may point anywhere in the file (``#/x-stash``), and what it points at is
    evaluated as a schema."""
    stack: list[tuple[tuple[str, ...], Any]] = [((), document)]
    while stack:
        at, node = stack.pop()
        if isinstance(node, list):
            stack.extend(((*at, str(i)), v) for i, v in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        if problem := _refused_here(node, at=at, document=document):
            return problem
        stack.extend(((*at, str(k)), v) for k, v in node.items())
    return None


def _refused_here(node: dict[str, Any], *, at: tuple[str, ...], document: dict[str, Any]) -> str | None:
    where = "/".join(at) or "the top level"
    for keyword in ("$schema", "$id"):
        if at and keyword in node:  # another dialect, or another base for references
            return f"{keyword} is allowed only at the top level (at {where})"
    for keyword, why in _REFUSED.items():
        if keyword in node:
            return f"{why} (at {where})"
    ref = node.get("$ref")
    if isinstance(ref, str) and not ref.startswith("#"):
        return f"$ref {ref!r} points outside the file; only references within it (#/...) are followed"
    if isinstance(ref, str) and not _resolves(document, ref):
        return f"$ref {ref!r} at {where} points at nothing in the file"
    patterns = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
    patterns += list(node["patternProperties"]) if isinstance(node.get("patternProperties"), dict) else []
    for pattern in patterns:
        if bad := logpattern.problem(pattern):
            return f"pattern {pattern!r} at {where} {bad}"
    return None


def _resolves(document: dict[str, Any], ref: str) -> bool:
    """Whether ``#/json/pointer`` or ``#anchor`` names something in ``document``."""
    fragment = urllib.parse.unquote(ref[1:])
    if fragment and not fragment.startswith("/"):
        return _has_anchor(document, fragment)
    target: Any = document
    for escaped in fragment.split("/")[1:]:
        part = escaped.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            return False
    return isinstance(target, dict | bool)


def _has_anchor(document: Any, name: str) -> bool:
    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("$anchor") == name:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _violation(error: jsonschema.exceptions.ValidationError) -> Violation:
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties":
        return Violation(path=path, message="unknown key: the recipe's values schema does not allow it")
    return Violation(path=path, message=_short(error.message))


# --- the bounded validator --------------------------------------------------------------------

Keyword = Callable[[Any, Any, Any, Mapping[str, Any]], Iterator[jsonschema.exceptions.ValidationError]]


def _timed(keyword: Keyword) -> Keyword:
    def run(validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
        budget.current().check_time()
        yield from keyword(validator, value, instance, schema) or ()

    return run


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> logpattern.LogPattern:
    return logpattern.compile_pattern(pattern)  # checked when the schema was loaded


def _matches(pattern: str, text: str) -> bool:
    return _compiled(pattern).search_whole(text)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _matches(pattern, instance):
        yield jsonschema.exceptions.ValidationError(
            f"{_short(repr(instance), 80)} does not match {pattern!r}"
        )


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _matches(pattern, str(key)):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _extras(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    known = schema.get("properties") or {}
    patterns = list(schema.get("patternProperties") or ())
    return [k for k in instance if k not in known and not any(_matches(p, str(k)) for p in patterns)]


def _additional_properties(
    validator: Any, allowed: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    extras = _extras(instance, schema)
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed:
        for extra in extras:
            yield jsonschema.exceptions.ValidationError(f"{extra!r} is not allowed", path=[extra])


def _canonical(value: Any) -> Any:
    """A hashable form under which two JSON values are equal exactly when JSON Schema says so
    (1 equals 1.0, true does not equal 1, key order does not count)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, Mapping):
        return ("object", frozenset((str(k), _canonical(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("array", tuple(_canonical(v) for v in value))
    return ("other", repr(value))


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[Any]:
    if unique and validator.is_type(instance, "array"):
        seen: set[Any] = set()
        for index, item in enumerate(instance):
            key = _canonical(item)
            if key in seen:
                yield jsonschema.exceptions.ValidationError(f"item {index} repeats an earlier item")
                return
            seen.add(key)


_BASE: Any = jsonschema.Draft202012Validator
_VALIDATOR: Any = jsonschema.validators.extend(
    _BASE,
    validators={
        keyword: _timed(function)
        for keyword, function in {
            **_BASE.VALIDATORS,
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
            "uniqueItems": _unique_items,
        }.items()
    },
)
_META: Any = _BASE(_BASE.META_SCHEMA, format_checker=_BASE.FORMAT_CHECKER)
"""The meta-schema's validator: its own parts name their ``$schema``, so jsonschema
evaluates them with its plain validator whatever this one is; ``MAX_NODES`` bounds it."""
