"""Loading and validating a recipe: ``recipe.yaml``, the state graph and its documents.

A recipe arrives as a mapping of relative path to text, whatever its source (a directory,
a ConfigMap, the built-in assets), so every source is validated by the same code. The
whole recipe is checked here, before anything is rendered or written: ``recipe.yaml``
and its state graph (``recipe_yaml``), a directory per state, and every document's
template syntax. Each document remembers its file and first line so every
later error can point at it.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sro import errors
from sro.model import names
from sro.render import problems as problems_
from sro.render import recipe_yaml, schema, templates

RECIPE_FILE = "recipe.yaml"
DOCUMENT_EXTENSIONS = (".yaml", ".yml")
CONFIGMAP_SEPARATOR = "__"

_KERNEL_AFFINE = re.compile(
    r"^\s*['\"]?(?:sro\.dev|specialresource\.openshift\.io)/kernel-affine['\"]?\s*:\s*(['\"])true\1\s*(?:#.*)?$",
    re.MULTILINE,
)


class Source(enum.StrEnum):
    """Where a recipe came from, as status reports it."""

    BUILT_IN = "built-in"
    DIRECTORY = "directory"
    CONFIGMAP = "configmap"


@dataclass(frozen=True, kw_only=True)
class Document:
    """One YAML document of a state file, compiled and ready to render."""

    location: errors.Location  # file and the line the document starts on
    index: int  # 1-based position of the document in its file
    text: str
    kernel_affine: bool  # the source carries the literal sro.dev/kernel-affine: "true"
    compiled: templates.Compiled = field(repr=False, compare=False)


@dataclass(frozen=True, kw_only=True)
class State:
    name: str
    after: tuple[str, ...]
    documents: tuple[Document, ...]
    location: errors.Location  # its entry in recipe.yaml


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """A validated recipe. ``digest`` changes whenever any of its files does."""

    name: str
    description: str
    node_selector: Mapping[str, str]
    defaults: Mapping[str, Any]
    states: tuple[State, ...]
    source: Source
    origin: str  # the directory or ConfigMap it was read from
    digest: str
    warnings: tuple[str, ...] = ()
    values_schema: schema.ValuesSchema | None = None
    """The recipe's ``values.schema.json``, which the merged ``set`` must satisfy."""

    def state(self, name: str) -> State:
        for state in self.states:
            if state.name == name:
                return state
        raise KeyError(name)


MAX_FILE_BYTES = 1024 * 1024
"""Largest recipe file read: far above any manifest (the API server refuses objects over
1.5 MiB), small enough that a stray log or binary never fills memory."""
MAX_FILES = 1000
"""Most files a recipe directory may hold (states times files)."""


def read_text(path: Path, *, shown: str) -> str:
    """A recipe file's (or any input file's) text; what cannot be read as such (not a
    regular file, unreadable, over MAX_FILE_BYTES, not UTF-8) is ``RecipeInvalid`` naming it."""
    where = errors.Location(file=shown)
    try:
        if not path.is_file():
            raise errors.RecipeInvalid("not a regular file", location=where)
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise errors.RecipeInvalid(f"cannot be read: {exc.strerror or exc}", location=where) from None
    if len(raw) > MAX_FILE_BYTES:
        raise errors.RecipeInvalid(f"larger than {MAX_FILE_BYTES} bytes", location=where)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise errors.RecipeInvalid(
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x})", location=errors.Location(file=shown, line=line)
        ) from None


def files_from_directory(path: Path, *, display: str | None = None) -> dict[str, str]:
    """Every file of a recipe directory (one level of state directories), by relative path.

    A file that cannot be read as text (not UTF-8, unreadable, a device, too large) is
    ``RecipeInvalid`` naming it; a directory without ``recipe.yaml`` says so.
    """
    shown = (display or str(path)).rstrip("/")
    if not path.is_dir():
        raise errors.RecipeNotFound(
            f"recipe directory {path} does not exist", location=errors.Location(file=str(path))
        )
    if not (path / RECIPE_FILE).is_file():
        raise errors.RecipeInvalid(
            f"{RECIPE_FILE} is missing: a recipe directory holds {RECIPE_FILE} and one directory per state",
            location=errors.Location(file=f"{shown}/{RECIPE_FILE}"),
        )
    files: dict[str, str] = {}

    def add(relative: str, entry: Path) -> None:
        where = f"{shown}/{relative}"
        if len(files) >= MAX_FILES:
            raise errors.RecipeInvalid(f"more than {MAX_FILES} files", location=errors.Location(file=shown))
        try:
            relative.encode("utf-8")
        except UnicodeEncodeError:
            raise errors.RecipeInvalid(
                "the file name is not UTF-8 text", location=errors.Location(file=where)
            ) from None
        files[relative] = read_text(entry, shown=where) if not relative.endswith("/") else ""

    try:
        for entry in sorted(path.iterdir()):
            if not entry.is_dir():
                add(entry.name, entry)
                continue
            children = sorted(entry.iterdir())
            for child in children:
                add(f"{entry.name}/{child.name}", child)
            if not children:
                add(f"{entry.name}/", entry)  # an empty directory, so the state check can name it
    except OSError as exc:
        raise errors.RecipeInvalid(
            f"cannot be listed: {exc.strerror or exc}", location=errors.Location(file=shown)
        ) from None
    return files


def files_from_configmap(data: Mapping[str, str], *, origin: str) -> dict[str, str]:
    """ConfigMap keys (``recipe.yaml``, ``<state>__<file>.yaml``) as relative paths."""
    files: dict[str, str] = {}
    for key, text in data.items():
        if key in (RECIPE_FILE, schema.SCHEMA_FILE):
            files[key] = text
            continue
        state, sep, name = key.partition(CONFIGMAP_SEPARATOR)
        if not sep or not state or not name:
            raise errors.RecipeInvalid(
                f"ConfigMap key {key!r} is neither {RECIPE_FILE}, {schema.SCHEMA_FILE} "
                f"nor <state>{CONFIGMAP_SEPARATOR}<file>.yaml",
                location=errors.Location(file=origin),
            )
        files[f"{state}/{name}"] = text
    return files


def load_directory(path: Path, *, source: Source = Source.DIRECTORY, display: str | None = None) -> Recipe:
    """Load and validate the recipe in directory ``path``; raise the first RecipeError."""
    return load(
        path.name, files_from_directory(path, display=display), source=source, origin=display or str(path)
    )


def load(name: str, files: Mapping[str, str], *, source: Source, origin: str) -> Recipe:
    """Load and validate a recipe from its files; raise the first RecipeError."""
    found = problems_.Problems()
    recipe = collect(name, files, source=source, origin=origin, problems=found)
    found.raise_first()
    assert recipe is not None
    return recipe


def collect(
    name: str, files: Mapping[str, str], *, source: Source, origin: str, problems: problems_.Problems
) -> Recipe | None:
    """Validate a recipe, adding every problem found to ``problems``; None if any."""
    where = origin.rstrip("/")
    if not names.is_dns_label(name):
        problems.add(
            errors.RecipeInvalid(
                f"recipe name {name!r} must be a DNS label", location=errors.Location(file=where)
            )
        )
    if RECIPE_FILE not in files:
        problems.add(errors.RecipeInvalid(f"no {RECIPE_FILE}", location=errors.Location(file=where)))
        return None
    recipe_file = f"{where}/{RECIPE_FILE}"
    try:
        header = recipe_yaml.Header.parse(files[RECIPE_FILE], file=recipe_file, problems=problems)
    except errors.RecipeError as exc:
        problems.add(exc)
        return None
    tags = sum(templates.tag_count(t) for p, t in files.items() if p.endswith(DOCUMENT_EXTENSIONS))
    if tags > templates.MAX_RECIPE_TAGS:
        problems.add(
            errors.RecipeInvalid(
                f"more than {templates.MAX_RECIPE_TAGS} template tags in the recipe's documents ({tags})",
                location=errors.Location(file=where),
            )
        )
        return None
    values_schema = None
    if schema.SCHEMA_FILE in files:
        try:
            values_schema = schema.load(files[schema.SCHEMA_FILE], file=f"{where}/{schema.SCHEMA_FILE}")
        except errors.RecipeError as exc:
            problems.add(exc)
    states = []
    for entry in header.states:
        docs = _state_documents(entry, files, where=where, problems=problems)
        states.append(State(name=entry.name, after=entry.after, documents=docs, location=entry.location))
    declared = {s.name for s in header.states}
    for path in files:
        directory = path.partition("/")[0]
        if "/" in path and directory not in declared:
            problems.warn(f"{where}/{directory}: directory is not a state listed in {RECIPE_FILE}; ignored")
    if problems:
        return None
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    return Recipe(
        name=name,
        description=header.description,
        node_selector=MappingProxyType(header.node_selector),
        defaults=MappingProxyType(header.defaults),
        states=tuple(states),
        source=source,
        origin=origin,
        digest=digest.hexdigest()[:16],
        warnings=tuple(problems.warnings),
        values_schema=values_schema,
    )


def _state_documents(
    entry: recipe_yaml.StateEntry, files: Mapping[str, str], *, where: str, problems: problems_.Problems
) -> tuple[Document, ...]:
    prefix = entry.name + "/"
    paths = sorted(p for p in files if p.startswith(prefix) and p != prefix)
    if not any(p.endswith(DOCUMENT_EXTENSIONS) for p in paths):
        exists = prefix in files or any(p.startswith(prefix) for p in files)
        why = "has no .yaml files" if exists else "has no directory"
        problems.add(
            errors.RecipeInvalid(
                f"state {entry.name!r} {why} (expected {where}/{entry.name}/*.yaml)", location=entry.location
            )
        )
        return ()
    docs: list[Document] = []
    for path in paths:
        if not path.endswith(DOCUMENT_EXTENSIONS):
            continue
        for doc in split_documents(files[path], file=f"{where}/{path}"):
            try:
                docs.append(_compile(doc))
            except errors.RecipeError as exc:
                problems.add(exc)
    return tuple(docs)


@dataclass(frozen=True, kw_only=True)
class _Split:
    location: errors.Location
    index: int
    text: str


def split_documents(text: str, *, file: str) -> list[_Split]:
    """Documents of a file, split on lines that are exactly ``---``; blank ones dropped.

    ``index`` counts the non-blank documents, so "document 2" is the second one a reader sees.
    """
    segments: list[tuple[int, list[str]]] = []
    start, current = 1, list[str]()
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        if line.rstrip("\r\n") == "---":
            segments.append((start, current))
            start, current = number + 1, []
        else:
            current.append(line)
    segments.append((start, current))
    out: list[_Split] = []
    for first_line, lines in segments:
        body = "".join(lines)
        if body.strip():
            out.append(
                _Split(location=errors.Location(file=file, line=first_line), index=len(out) + 1, text=body)
            )
    return out


def _compile(doc: _Split) -> Document:
    return Document(
        location=doc.location,
        index=doc.index,
        text=doc.text,
        kernel_affine=_KERNEL_AFFINE.search(doc.text) is not None,
        compiled=templates.compile_document(doc.text, location=doc.location),
    )
