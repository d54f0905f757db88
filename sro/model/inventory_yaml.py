"""Reading an inventory file's YAML with the line of every mapping and sequence kept.

An inventory is typed by hand, so an error must say where: the loader here remembers
the line of each mapping, sequence and mapping key, refuses duplicate keys (PyYAML keeps
the last one silently), and turns every YAML failure, including nesting deep enough to
exhaust Python's recursion, into ``InventoryInvalid``. The typed readers (``scalar``,
``count``, ``mapping``, ...) accept only what the format allows, so hostile text (a
recursive alias, a list where a name belongs) is refused instead of stringified.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from typing import Any

import yaml
from yaml.constructor import ConstructorError

from sro import errors


class InventoryInvalid(errors.RecipeInvalid):
    """A node inventory or Node file that cannot be read; the message names file, line, field."""


class _Map(dict[Any, Any]):
    line = 0
    key_lines: dict[str, int]


class _Seq(list[Any]):
    line = 0


class _Loader(yaml.SafeLoader):
    """SafeLoader whose mappings and sequences know their line; duplicate keys are errors."""


def _map(loader: _Loader, node: yaml.MappingNode) -> Iterator[_Map]:
    data = _Map()
    data.line = node.start_mark.line + 1
    data.key_lines = {}
    yield data
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # merges of merges grow exponentially
            raise ConstructorError(None, None, "merge keys (<<) are not supported here", key_node.start_mark)
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode):
            if key_node.value in data.key_lines:
                first = data.key_lines[key_node.value]
                raise ConstructorError(
                    None,
                    None,
                    f"duplicate key {key_node.value!r} (first at line {first})",
                    key_node.start_mark,
                )
            data.key_lines[key_node.value] = key_node.start_mark.line + 1
    data.update(loader.construct_mapping(node))


def _seq(loader: _Loader, node: yaml.SequenceNode) -> Iterator[_Seq]:
    data = _Seq()
    data.line = node.start_mark.line + 1
    yield data
    data.extend(loader.construct_sequence(node))


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _map)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _seq)


def load_all(text: str, *, file: str) -> list[Any]:
    """Every document of ``text``; any YAML problem is an ``InventoryInvalid`` with its line."""
    try:
        return list(yaml.load_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        problem = exc.problem or exc.context or "not YAML"
        raise InventoryInvalid(
            f"invalid YAML: {problem}", location=errors.Location(file=file, line=line)
        ) from None
    except yaml.YAMLError as exc:
        one_line = " ".join(str(exc).split())  # PyYAML's own text spans lines
        raise InventoryInvalid(f"invalid YAML: {one_line}", location=errors.Location(file=file)) from None
    except RecursionError:
        raise InventoryInvalid(
            "invalid YAML: nested too deeply", location=errors.Location(file=file)
        ) from None


def line_of(value: Any, key: Any = None) -> int:
    """The line of a loaded mapping or sequence (or of one of its keys); 0 when unknown."""
    if key is not None and isinstance(value, _Map):
        return value.key_lines.get(str(key), value.line)
    return int(getattr(value, "line", 0))


def _fail(message: str, *, file: str, line: int) -> InventoryInvalid:
    return InventoryInvalid(message, location=errors.Location(file=file, line=line))


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return "nothing" if value is None else type(value).__name__


def mapping(value: Any, *, where: str, file: str, line: int = 0, optional: bool = False) -> Mapping[Any, Any]:
    """``value`` if it is a mapping (or ``{}`` for an absent optional one)."""
    if value is None and optional:
        return {}
    if not isinstance(value, Mapping):
        raise _fail(
            f"{where}: expected a mapping, got {_kind(value)}", file=file, line=line_of(value) or line
        )
    return value


def sequence(value: Any, *, where: str, file: str, line: int = 0) -> list[Any]:
    """``value`` if it is a list; an absent one is empty."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(f"{where}: expected a list, got {_kind(value)}", file=file, line=line_of(value) or line)
    return value


def scalar(value: Any, *, where: str, file: str, line: int) -> str:
    """A string, number or boolean as the text Kubernetes would hold (``true``, not ``True``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float | datetime.date):
        return str(value)
    raise _fail(f"{where}: expected a string, got {_kind(value)}", file=file, line=line_of(value) or line)


def count(value: Any, *, where: str, file: str, line: int) -> int:
    """A whole number of at least zero."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(f"{where}: expected a whole number ≥ 0, got {value!r:.40}", file=file, line=line)
    return value


def boolean(value: Any, *, where: str, file: str, line: int) -> bool:
    if not isinstance(value, bool):
        raise _fail(f"{where}: expected true or false, got {value!r:.40}", file=file, line=line)
    return value


def node_object(value: Any, *, where: str, file: str, line: int = 0) -> Mapping[str, Any]:
    """``value`` if it has the shape of a Node wherever ``NodeView.from_body`` reads it."""
    line = line_of(value) or line
    body = mapping(value, where=where, file=file, line=line)
    if body.get("kind", "Node") != "Node":
        raise _fail(f"{where}: expected kind Node, got {body.get('kind')!r:.40}", file=file, line=line)
    meta = _field(body, "metadata", where=where, file=file, optional=False)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise _fail(f"{where}.metadata.name: expected a name", file=file, line=line_of(meta) or line)
    where = f"Node {name}: "
    for key in ("labels", "annotations"):
        _strings(
            _field(meta, key, where=f"{where}metadata", file=file), where=f"{where}metadata.{key}", file=file
        )
    scalar(meta.get("resourceVersion", ""), where=f"{where}metadata.resourceVersion", file=file, line=line)
    spec = _field(body, "spec", where=where, file=file)
    taints = sequence(
        spec.get("taints"), where=f"{where}spec.taints", file=file, line=line_of(spec, "taints")
    )
    for i, taint in enumerate(taints):
        t = mapping(taint, where=f"{where}spec.taints[{i}]", file=file, line=line_of(taints))
        _strings({k: t[k] for k in ("key", "value", "effect") if t.get(k) is not None},
                 where=f"{where}spec.taints[{i}]", file=file, line=line_of(t))  # fmt: skip
    status = _field(body, "status", where=where, file=file)
    for key in ("nodeInfo", "allocatable"):
        _strings(
            _field(status, key, where=f"{where}status", file=file), where=f"{where}status.{key}", file=file
        )
    conditions = sequence(
        status.get("conditions"),
        where=f"{where}status.conditions",
        file=file,
        line=line_of(status, "conditions"),
    )
    for i, c in enumerate(conditions):
        mapping(c, where=f"{where}status.conditions[{i}]", file=file, line=line_of(conditions))
    return body


def _field(
    parent: Mapping[Any, Any], key: str, *, where: str, file: str, optional: bool = True
) -> Mapping[Any, Any]:
    sep = "" if where.endswith(" ") else "."
    return mapping(
        parent.get(key), where=f"{where}{sep}{key}", file=file, line=line_of(parent, key), optional=optional
    )


def _strings(values: Mapping[Any, Any], *, where: str, file: str, line: int = 0) -> None:
    for k, v in values.items():
        scalar(k, where=f"{where} key", file=file, line=line_of(values) or line)
        scalar(v, where=f"{where}.{k}", file=file, line=line_of(values, k) or line)
