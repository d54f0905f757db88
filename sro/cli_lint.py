"""``sro lint``: recipe directories, ConfigMap recipes and SpecialResource files, checked offline.

Each recipe is validated and rendered by the code ``sro run`` uses (``sro.hooks.offline``
over ``sro.hooks.pipeline``), once per SpecialResource given that names it (or once with
every default), so lint refuses what the operator would refuse, values schema included.
A ConfigMap recipe is read from its YAML file exactly as the operator reads the one it
watches, and every message points at the file's own lines (``hooks.offline_inputs``).

Three formats, one finding per line or item: ``text`` (``file:line: message``, what
editors and terminals jump to), ``json`` (one object with ``errors`` and ``warnings``,
each with file, line, message and, for errors, the condition reason the operator would
report) and ``github`` (workflow commands, ``::error file=F,line=N::message``, which a
GitHub Actions run shows on the pull request's lines). Exit status: 1 when there is an
error, 0 otherwise (warnings alone do not fail).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from sro import errors
from sro.hooks import offline, offline_inputs
from sro.model import recipe_policy
from sro.render import kinds, policy_file, sources
from sro.render import recipe as recipe_

FORMATS = ("text", "json", "github")


def one_line(text: str) -> str:
    """A problem as one line, whatever its message quotes (a value may hold line breaks)."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def print_warning(message: str, out: TextIO) -> None:
    where, sep, rest = message.partition(": ")
    print(f"{where}: warning: {rest}" if sep else f"warning: {message}", file=out)


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One problem or warning, split into where and what."""

    severity: str  # error | warning
    file: str
    line: int
    message: str
    reason: str = ""

    @classmethod
    def of_error(cls, error: errors.RecipeError) -> Finding:
        where = error.location
        return cls(
            severity="error",
            file=where.file if where else "",
            line=where.line if where else 0,
            message=error.message,
            reason=error.reason,
        )

    @classmethod
    def of_warning(cls, text: str) -> Finding:
        where, sep, rest = text.partition(": ")
        if not sep:
            return cls(severity="warning", file="", line=0, message=text)
        file, colon, line = where.rpartition(":")
        if colon and line.isdigit():
            return cls(severity="warning", file=file, line=int(line), message=rest)
        return cls(severity="warning", file=where, line=0, message=rest)


def run(args: argparse.Namespace) -> int:
    found, warned = collect(
        args.paths,
        policy=policy_file.load(args.recipe_policy),
        declared=kinds.Declared.parse(args.api_versions or ()),
    )
    write(found, warned, output=args.format, out=sys.stdout)
    return 1 if found else 0


def write(found: Sequence[errors.RecipeError], warned: Sequence[str], *, output: str, out: TextIO) -> None:
    """The findings in format ``output`` (one of FORMATS)."""
    if output == "json":
        items = {
            "errors": [Finding.of_error(e).__dict__ for e in found],
            "warnings": [Finding.of_warning(w).__dict__ for w in warned],
        }
        for group in items.values():
            for item in group:
                del item["severity"]
        out.write(json.dumps(items, indent=2) + "\n")
    elif output == "github":
        findings = [Finding.of_warning(w) for w in warned] + [Finding.of_error(e) for e in found]
        for finding in findings:
            print(_workflow_command(finding), file=out)
    else:
        for warning in warned:
            print_warning(one_line(warning), out)
        for error in found:
            print(one_line(str(error)), file=out)


def _workflow_command(finding: Finding) -> str:
    """``::error file=F,line=N,title=Reason::message``, escaped as GitHub Actions reads it."""
    props = [f"file={_escape(finding.file, prop=True)}"] if finding.file else []
    props += [f"line={finding.line}"] if finding.line else []
    props += [f"title={_escape(finding.reason, prop=True)}"] if finding.reason else []
    return f"::{finding.severity} {','.join(props)}::{_escape(finding.message)}".replace(" ::", "::")


def _escape(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def collect(
    paths: Iterable[str],
    *,
    policy: recipe_policy.RecipePolicy = recipe_policy.DEFAULT,
    declared: kinds.Declared = kinds.BUILTIN,
) -> tuple[list[errors.RecipeError], list[str]]:
    """Every error and warning of the recipe directories and YAML files ``paths``."""
    failures: list[errors.RecipeError] = []
    warnings: list[str] = []
    directories: list[Path] = []
    docs: list[offline_inputs.SpecialResourceDoc] = []
    configmaps: list[offline_inputs.ConfigMapRecipe] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            directories.append(path)
        elif path.is_file() and path.suffix not in (".yaml", ".yml", ".json"):
            warnings.append(f"{path}: neither a recipe directory nor a YAML file; skipped")
        elif path.is_file():
            read = offline_inputs.read(path)
            docs.extend(read.srs)
            configmaps.extend(read.recipes)
            failures.extend(read.problems)
        else:
            why = "neither a directory nor a regular file" if path.exists() else "no such file or directory"
            failures.append(errors.RecipeError(why, location=errors.Location(file=raw)))
    srs = [d.sr for d in docs]
    by_name = {d.sr.name: d for d in docs}

    def check(name: str, files: dict[str, str], *, source: recipe_.Source, origin: str) -> None:
        users = [s for s in srs if s.spec.recipe == name]
        _, report = offline.load_and_check(
            name, files, source=source, origin=origin, srs=users, policy=policy, declared=declared
        )
        failures.extend(offline_inputs.relocate_values(e, by_name) for e in report.errors)
        warnings.extend(report.warnings)

    for directory in directories:
        try:
            files = recipe_.files_from_directory(directory, display=str(directory))
        except errors.RecipeError as exc:
            failures.append(exc)
            continue
        check(directory.name, files, source=recipe_.Source.DIRECTORY, origin=str(directory).rstrip("/"))
    for configmap in configmaps:
        before_errors, before_warnings = len(failures), len(warnings)
        try:
            check(configmap.name, configmap.files(), source=recipe_.Source.CONFIGMAP, origin=configmap.origin)
        except errors.RecipeError as exc:
            failures.append(exc)
        failures[before_errors:] = [configmap.relocate(e) for e in failures[before_errors:]]
        warnings[before_warnings:] = [configmap.relocate_text(w) for w in warnings[before_warnings:]]
    linted = {d.name for d in directories} | {c.name for c in configmaps}
    search = sources.default_search_path()
    for name in sorted({s.spec.recipe for s in srs} - linted):
        try:  # a SpecialResource naming a recipe not given: checked with the built-in one
            path, source = search.locate(name)
        except errors.RecipeError:
            warnings.extend(
                f"{s.name}: recipe {name!r} is not built in and not linted here; "
                "only the SpecialResource was checked"
                for s in srs
                if s.spec.recipe == name
            )
            continue
        check(path.name, recipe_.files_from_directory(path), source=source, origin=str(path))
    return failures, warnings
