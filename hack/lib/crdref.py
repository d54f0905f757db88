"""Writes docs/crd-reference.md from the CRD itself, so the reference cannot drift from it.

The CRD's schema carries a description, bounds and CEL rules on every field (that is what
``kubectl explain`` shows); this turns it into one page an administrator can read and
search. ``tests/unit/docs`` fails when the checked-in page differs from what this prints.

Usage: python hack/lib/crdref.py [--check] [REPO]   (default: write the page)
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

CRD = Path("manifests/crd/sro.dev_specialresources.yaml")
PAGE = Path("docs/crd-reference.md")


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _type(schema: Mapping[str, Any]) -> str:
    kind = str(schema.get("type", "any"))
    if kind == "array":
        return f"[]{_type(schema.get('items') or {})}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        return f"map[string]{_type(schema['additionalProperties'])}"
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return "object (free-form)"
    if "format" in schema:
        return f"{kind} ({schema['format']})"
    return kind


def _bounds(schema: Mapping[str, Any], required: bool) -> str:
    parts = ["required"] if required else []
    for key in ("maxLength", "maxItems", "maxProperties", "minimum", "maximum"):
        if key in schema:
            parts.append(f"{key} {schema[key]}")
    item = schema.get("additionalProperties")
    if isinstance(item, Mapping) and "maxLength" in item:
        parts.append(f"values maxLength {item['maxLength']}")
    if "enum" in schema:
        parts.append("one of " + ", ".join(f"`{v}`" for v in schema["enum"]))
    if "default" in schema:
        default = schema["default"]
        parts.append(f"default `{default if not isinstance(default, dict) else '{}'}`")
    if "x-kubernetes-list-map-keys" in schema:
        parts.append("unique by " + ", ".join(schema["x-kubernetes-list-map-keys"]))
    return "; ".join(parts)


def _fields(schema: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, Mapping[str, Any], bool]]:
    """(path, schema, required) for every field below ``schema``, depth first in file order."""
    if schema.get("type") == "array" and isinstance(schema.get("items"), Mapping):
        yield from _fields(schema["items"], prefix + "[]")
        return
    required = set(schema.get("required") or ())
    for name, child in (schema.get("properties") or {}).items():
        path = f"{prefix}.{name}" if prefix else name
        yield path, child, name in required
        yield from _fields(child, path)


def _rules(schema: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, str]]:
    for rule in schema.get("x-kubernetes-validations") or ():
        yield prefix or "(object)", str(rule.get("message") or rule.get("rule"))
    for path, child, _ in _fields(schema, prefix):
        for rule in child.get("x-kubernetes-validations") or ():
            yield path, str(rule.get("message") or rule.get("rule"))


def render(crd: Mapping[str, Any]) -> str:
    spec = crd["spec"]
    names = spec["names"]
    out = [
        f"# {names['kind']} reference",
        "",
        f"Generated from `{CRD}` by `python hack/lib/crdref.py`; do not edit by hand (a unit",
        "test fails when this page and the CRD differ). `kubectl explain sr.spec` shows the same",
        "descriptions on a cluster.",
        "",
        f"- Group `{spec['group']}`, kind `{names['kind']}`, plural `{names['plural']}`, "
        f"short names {', '.join(f'`{n}`' for n in names.get('shortNames') or ())}, "
        f"scope `{spec['scope']}`.",
    ]
    for version in spec["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        subresources = ", ".join(sorted(version.get("subresources") or {})) or "none"
        out += [
            f"- Version `{version['name']}` (served: {str(version.get('served')).lower()}, "
            f"storage: {str(version.get('storage')).lower()}; subresources: {subresources}).",
            "",
            _cell(schema.get("description", "")),
            "",
            f"## `kubectl get sr` columns ({version['name']})",
            "",
            "| column | from | meaning |",
            "|---|---|---|",
        ]
        for column in version.get("additionalPrinterColumns") or ():
            meaning = _cell(column.get("description", ""))
            out.append(f"| {column['name'].upper()} | `{column['jsonPath']}` | {meaning} |")
        for part in ("spec", "status"):
            sub = schema["properties"][part]
            out += ["", f"## `{part}` ({version['name']})", "", _cell(sub.get("description", "")), ""]
            out += ["| field | type | bounds | description |", "|---|---|---|---|"]
            for path, child, required in _fields(sub, part):
                out.append(
                    f"| `{path}` | {_cell(_type(child))} | {_cell(_bounds(child, required))} "
                    f"| {_cell(child.get('description', ''))} |"
                )
        out += [
            "",
            f"## Validation rules ({version['name']})",
            "",
            "Checked by the API server when an object is written (CEL, `x-kubernetes-validations`):",
            "",
            "| where | message when refused |",
            "|---|---|",
        ]
        out += [f"| `{where}` | {_cell(message)} |" for where, message in _rules(schema, "")]
    return "\n".join(line.rstrip() for line in out).replace("\n\n\n", "\n\n") + "\n"


def generate(repo: Path) -> str:
    crd = yaml.safe_load((repo / CRD).read_text())
    return render(crd)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    rest = [a for a in argv if a != "--check"]
    repo = Path(rest[0]) if rest else Path(__file__).resolve().parents[2]
    text = generate(repo)
    page = repo / PAGE
    if check:
        if not page.is_file() or page.read_text() != text:
            print(f"{PAGE} is stale: run python hack/lib/crdref.py", file=sys.stderr)
            return 1
        return 0
    page.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
