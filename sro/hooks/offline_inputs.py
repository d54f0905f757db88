"""What ``sro lint`` and ``sro render`` read from YAML files: SpecialResources and ConfigMap
recipes, each remembering the lines it came from.

A drop-in recipe may be a ConfigMap labelled ``sro.dev/recipe: <name>`` (contract §2);
offline it is checked by the very code the operator uses on the one it watches
(``recipe.files_from_configmap``, ``sources.configmap_recipe``), whose messages name
``configmap/<namespace>/<name>/<state>/<file>:<line>``. A person fixing the file wants
its own line, so every location inside the ConfigMap is mapped back to the line of the
file it came from: a block scalar (``|``) keeps its lines, so the template's line N is
the file's line after the key plus N; any other scalar points at its key. Likewise a
violation of a recipe's values schema points at the key under ``spec.set`` in the
SpecialResource's file, or at ``spec.set`` when the key is missing or a recipe default.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sro import errors
from sro.model import specialresource as srmodel
from sro.render import recipe as recipe_
from sro.render import sources, yamlstrict

DEFAULT_NAMESPACE = "sro-system"


@dataclass(frozen=True, kw_only=True)
class SpecialResourceDoc:
    """A SpecialResource read from a file, with its document's text and first line."""

    sr: srmodel.SpecialResource
    location: errors.Location
    text: str = field(repr=False)

    def set_location(self, path: Sequence[str | int]) -> errors.Location:
        """The line of ``spec.set.<path>`` in the file, or of the deepest part of it there."""
        line = _node_line(self.text, ("spec", "set", *path))
        return errors.Location(file=self.location.file, line=self.location.line + line - 1)


@dataclass(frozen=True, kw_only=True)
class ConfigMapRecipe:
    """A recipe held by a ConfigMap in a file: its data and where each key's value starts."""

    name: str  # the recipe's name: the value of the sro.dev/recipe label
    configmap: str
    namespace: str
    data: Mapping[str, str]
    file: str
    line: int  # where the ConfigMap's document starts
    values: Mapping[str, tuple[int, bool]] = field(repr=False)  # key: (line of its value, block scalar)

    @property
    def origin(self) -> str:
        """How the operator names this ConfigMap in messages and in status."""
        return f"configmap/{self.namespace}/{self.configmap}"

    def files(self) -> dict[str, str]:
        """The recipe's files, exactly as the operator reads them from the ConfigMap."""
        try:
            return recipe_.files_from_configmap(self.data, origin=self.origin)
        except errors.RecipeError as exc:
            raise self.relocate(exc) from None

    def load(self) -> recipe_.Recipe:
        """The validated recipe (``sources.configmap_recipe``); errors at the file's lines."""
        try:
            return sources.configmap_recipe(
                self.name, self.data, namespace=self.namespace, configmap=self.configmap
            )
        except errors.RecipeError as exc:
            raise self.relocate(exc) from None

    def relocate(self, error: errors.RecipeError) -> errors.RecipeError:
        """``error`` with its location mapped from the ConfigMap's key to the file's line."""
        where = error.location
        if where is None or not (where.file == self.origin or where.file.startswith(self.origin + "/")):
            return error
        moved = copy.copy(error)
        moved.location = self._line(where)
        return moved

    def relocate_text(self, text: str) -> str:
        """A warning's leading location mapped likewise."""
        where, sep, rest = text.partition(": ")
        if not sep or not where.startswith(self.origin):
            return text
        file, _, line = where.partition(":")
        location = errors.Location(file=file, line=int(line) if line.isdigit() else 0)
        return f"{self._line(location)}: {rest}"

    def _line(self, where: errors.Location) -> errors.Location:
        relative = where.file.removeprefix(self.origin).lstrip("/")
        key = relative.replace("/", recipe_.CONFIGMAP_SEPARATOR, 1) if "/" in relative else relative
        if key not in self.values:
            return errors.Location(file=self.file, line=self.line)
        first, block = self.values[key]
        if block and where.line:
            return errors.Location(file=self.file, line=first + where.line - 1)
        return errors.Location(file=self.file, line=first - 1 if block else first)  # the key's line


@dataclass(frozen=True, kw_only=True)
class Inputs:
    """Everything found in the YAML files given to lint or render."""

    srs: tuple[SpecialResourceDoc, ...] = ()
    recipes: tuple[ConfigMapRecipe, ...] = ()
    problems: tuple[errors.RecipeError, ...] = ()


def read(path: Path, *, namespace: str = DEFAULT_NAMESPACE) -> Inputs:
    """The SpecialResources and ConfigMap recipes of a YAML file (other objects are skipped);
    a problem per invalid one, at its line. ``namespace`` is the operator's: the one a
    ConfigMap without ``metadata.namespace`` would be created in."""
    try:
        text = recipe_.read_text(path, shown=str(path))
    except errors.RecipeError as exc:
        return Inputs(problems=(exc,))
    srs: list[SpecialResourceDoc] = []
    recipes: list[ConfigMapRecipe] = []
    problems: list[errors.RecipeError] = []
    for doc in recipe_.split_documents(text, file=str(path)):
        try:
            body = yamlstrict.load(doc.text, file=str(path), line_offset=doc.location.line - 1)
            if isinstance(body, dict) and body.get("kind") == "ConfigMap":
                found = _configmap(
                    body, doc.text, file=str(path), line=doc.location.line, namespace=namespace
                )
                if found is not None:
                    recipes.append(found)
                continue
            if isinstance(body, dict) and body.get("kind") not in (None, srmodel.KIND):
                continue  # other objects may share the file
            sr = srmodel.parse(body, location=doc.location)
            srs.append(SpecialResourceDoc(sr=sr, location=doc.location, text=doc.text))
        except errors.RecipeError as exc:
            problems.append(exc)
    return Inputs(srs=tuple(srs), recipes=tuple(recipes), problems=tuple(problems))


@dataclass(frozen=True, kw_only=True)
class Loaded:
    """A recipe read for ``sro render``, and the ConfigMap it came from if it did."""

    recipe: recipe_.Recipe
    configmap: ConfigMapRecipe | None = None

    def relocate(self, error: errors.RecipeError) -> errors.RecipeError:
        """A render error at the file's line (a ConfigMap's key otherwise)."""
        return self.configmap.relocate(error) if self.configmap is not None else error


def load_recipe(path: Path, *, wanted: str | None = None) -> Loaded:
    """The recipe in directory ``path``, or the ConfigMap recipe in YAML file ``path`` (the
    one named ``wanted`` when the file holds several); the first RecipeError otherwise."""
    if path.is_dir():
        return Loaded(recipe=recipe_.load_directory(path, display=str(path).rstrip("/")))
    found = read(path)
    if found.problems:
        raise found.problems[0]
    named = [r for r in found.recipes if wanted is None or r.name == wanted]
    if len(named) != 1:
        held = ", ".join(r.name for r in found.recipes) or "none"
        why = "no" if not named else "more than one"
        which = f" named {wanted!r}" if wanted else ""
        raise errors.RecipeNotFound(
            f"{why} ConfigMap recipe{which} (labelled {sources.RECIPE_LABEL}) in the file; it holds: {held}",
            location=errors.Location(file=str(path)),
        )
    return Loaded(recipe=named[0].load(), configmap=named[0])


def relocate_values(error: errors.RecipeError, docs: Mapping[str, SpecialResourceDoc]) -> errors.RecipeError:
    """A values-schema violation of a SpecialResource read from a file, at its key's line."""
    if not isinstance(error, errors.ValuesInvalid) or error.sr not in docs:
        return error
    moved = copy.copy(error)
    moved.location = docs[error.sr].set_location(error.path)
    return moved


def _configmap(
    body: Mapping[str, Any], text: str, *, file: str, line: int, namespace: str
) -> ConfigMapRecipe | None:
    meta = body.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    if not isinstance(labels, Mapping) or sources.RECIPE_LABEL not in labels:
        return None  # an ordinary ConfigMap
    assert isinstance(meta, Mapping)
    where = errors.Location(file=file, line=line)
    data = body.get("data") or {}
    if not isinstance(data, Mapping):
        raise errors.RecipeInvalid("a recipe ConfigMap's data must be a mapping", location=where)
    values = _data_lines(text, offset=line - 1)
    for key, value in data.items():
        if not isinstance(value, str):
            at = errors.Location(file=file, line=values.get(str(key), (line, False))[0])
            raise errors.RecipeInvalid(f"data key {key!r}: ConfigMap values are strings", location=at)
    return ConfigMapRecipe(
        name=str(labels[sources.RECIPE_LABEL]),
        configmap=str(meta.get("name") or ""),
        namespace=str(meta.get("namespace") or namespace),
        data={str(k): v for k, v in data.items()},
        file=file,
        line=line,
        values=values,
    )


def _compose(text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=yamlstrict.StrictLoader)
    except yaml.YAMLError:
        return None


def _child(node: yaml.Node | None, part: str | int) -> tuple[yaml.Node, yaml.Node] | None:
    """(the node naming ``part``, its value) inside a mapping or sequence node."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                return key, value
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        return node.value[part], node.value[part]
    return None


def _node_line(text: str, path: Sequence[str | int]) -> int:
    """1-based line (in ``text``) of the deepest part of ``path`` that ``text`` holds."""
    node = _compose(text)
    line = 1
    for part in path:
        found = _child(node, part)
        if found is None:
            break
        line = found[0].start_mark.line + 1
        node = found[1]
    return line


def _data_lines(text: str, *, offset: int) -> dict[str, tuple[int, bool]]:
    """For each ``data`` key: the file line its value's first line is on, and whether the
    value is a block scalar (whose lines map one to one)."""
    data = _child(_compose(text), "data")
    if data is None or not isinstance(data[1], yaml.MappingNode):
        return {}
    out: dict[str, tuple[int, bool]] = {}
    for key, value in data[1].value:
        block = isinstance(value, yaml.ScalarNode) and value.style in ("|", ">")
        # A block scalar's text starts on the line after its indicator.
        first = value.start_mark.line + 2 if block else key.start_mark.line + 1
        out[str(key.value)] = (first + offset, block)
    return out
