"""The release's one version and where hack/release writes it.

A release has one version, taken from the git tag (``git describe``), and it must read the
same everywhere a person or a tool looks: the Python package (``sro version``), the image's
tag and OCI labels, the chart's ``version`` and ``appVersion``, the chart's default image and
the kustomize tree's ``images:``. This module turns the tag into the spellings each of those
accepts and rewrites the files; hack/release (bash) calls it, and tests call it directly.

- ``describe``: ``v1.2.3`` on the tagged commit is ``1.2.3`` everywhere. Past the tag,
  ``v1.2.3-4-gabc1234`` is SemVer ``1.2.3-4-gabc1234`` (a valid image tag and chart version)
  and PEP 440 ``1.2.3.post4+gabc1234``; ``-dirty`` is kept as ``.dirty`` in both. With no tag
  at all, the base is pyproject's version and the commit count is 0.
- ``stamp-chart``: sets ``version``/``appVersion`` in Chart.yaml and ``image.repository``,
  ``image.tag`` and ``image.digest`` in values.yaml, line by line, so comments stay.
- ``set-image``: the same for a kustomization's ``images:`` entry named ``sro``.
- ``stamp-package``: pyproject.toml's version and ``sro.__version__`` (``hack/release --pin``;
  a release image gets its version at build time instead, see the Containerfile).

Usage (hack/release): ``release.py versions [DESCRIBE]``, ``release.py stamp-chart DIR
--version V --repository R [--digest D]``, ``release.py set-image FILE --repository R --tag T
[--digest D]``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_DESCRIBE = re.compile(
    r"^v?(?P<base>\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?)"
    r"(?:-(?P<count>\d+)-g(?P<hash>[0-9a-f]+))?(?P<dirty>-dirty)?$"
)
_HASH_ONLY = re.compile(r"^(?P<hash>[0-9a-f]{4,40})(?P<dirty>-dirty)?$")


@dataclass(frozen=True)
class Versions:
    """One release version in the two spellings the tools accept."""

    semver: str
    """Image tag, chart version and appVersion, OCI label."""
    python: str
    """The package's version (PEP 440)."""


def pyproject_version(root: Path = REPO) -> str:
    with (root / "pyproject.toml").open("rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def from_describe(describe: str, *, fallback: str = "0.0.0") -> Versions:
    """Versions from ``git describe --tags --match 'v[0-9]*' --always --dirty --long`` output."""
    describe = describe.strip()
    hashed = _HASH_ONLY.match(describe)
    if hashed:  # no tag: `--always` gave the abbreviated commit
        describe = f"v{fallback}-0-g{hashed['hash']}{hashed['dirty'] or ''}"
    match = _DESCRIBE.match(describe)
    if not match:
        raise ValueError(f"not a release tag description: {describe!r} (tags look like v1.2.3)")
    base, count, commit, dirty = match["base"], match["count"], match["hash"], bool(match["dirty"])
    if commit is None or (count == "0" and not hashed):
        semver, python, local = base, _pep440(base), []
    else:
        semver = f"{base}-{count}-g{commit}"
        python, local = f"{_pep440(base)}.post{count}", [f"g{commit}"]
    if dirty:
        semver += ".dirty" if "-" in semver else "-dirty"
        local.append("dirty")
    return Versions(semver=semver, python=python + ("+" + ".".join(local) if local else ""))


def _pep440(semver: str) -> str:
    """``1.2.3`` stays; a SemVer pre-release ``1.2.3-rc.1`` is ``1.2.3rc1``."""
    base, _, pre = semver.partition("-")
    if not pre:
        return base
    match = re.fullmatch(r"(alpha|a|beta|b|rc)\.?(\d+)", pre)
    if not match:
        raise ValueError(f"pre-release {pre!r} has no PEP 440 spelling (use -alpha.N, -beta.N or -rc.N)")
    return f"{base}{_PEP440_PRE.get(match[1], match[1])}{match[2]}"


_PEP440_PRE = {"alpha": "a", "beta": "b"}


def _set_keys(text: str, *, section: str | None, values: dict[str, str]) -> str:
    """Replaces ``key: value`` lines (top level, or the first block under ``section:``)."""
    lines = text.splitlines(keepends=True)
    inside = section is None
    indent = ""
    seen: set[str] = set()
    for i, line in enumerate(lines):
        if section is not None and re.match(rf"^{re.escape(section)}:\s*$", line):
            inside, indent = True, ""
            continue
        if section is not None and inside and line.strip() and not line.startswith((" ", "#")):
            inside = False
        if not inside:
            continue
        match = re.match(r"^(?P<indent>\s*)(?P<key>[A-Za-z]+):(?P<rest>.*?)(?P<nl>\r?\n?)$", line)
        if not match or match["key"] not in values or match["key"] in seen:
            continue
        if section is not None and not match["indent"]:
            continue
        if section is not None:
            indent = indent or match["indent"]
            if match["indent"] != indent:
                continue
        comment = re.search(r"\s+#.*$", match["rest"])
        lines[i] = (
            f"{match['indent']}{match['key']}: {json.dumps(values[match['key']])}"
            f"{comment.group(0) if comment else ''}{match['nl']}"
        )
        seen.add(match["key"])
    missing = set(values) - seen
    if missing:
        raise ValueError(f"keys not found{f' under {section}' if section else ''}: {sorted(missing)}")
    return "".join(lines)


def stamp_chart(chart: Path, *, version: str, repository: str, digest: str = "") -> None:
    """Chart.yaml's version/appVersion and values.yaml's image, for one release."""
    chart_yaml = chart / "Chart.yaml"
    chart_yaml.write_text(
        _set_keys(chart_yaml.read_text(), section=None, values={"version": version, "appVersion": version})
    )
    values_yaml = chart / "values.yaml"
    values_yaml.write_text(
        _set_keys(
            values_yaml.read_text(),
            section="image",
            values={"repository": repository, "tag": version, "digest": digest},
        )
    )


def set_image(kustomization: Path, *, repository: str, tag: str, digest: str = "") -> None:
    """The ``sro`` entry of a kustomization's ``images:``: newName, newTag and digest."""
    text = kustomization.read_text()
    block = re.search(r"^images:\n(?:[ -].*\n)+", text, flags=re.MULTILINE)
    if not block or not re.search(r"^  - name: sro$", block.group(0), flags=re.MULTILINE):
        raise ValueError(f"{kustomization}: no images: entry named sro")
    entry = ["  - name: sro", f"    newName: {repository}", f"    newTag: {json.dumps(tag)}"]
    if digest:
        entry.append(f"    digest: {digest}")
    kustomization.write_text(text.replace(block.group(0), "images:\n" + "\n".join(entry) + "\n"))


def stamp_package(root: Path, *, version: str) -> None:
    """pyproject.toml's ``version`` and ``sro.__version__`` (the PEP 440 spelling)."""
    for path, pattern, line in [
        (root / "pyproject.toml", r'^version = ".*"$', f"version = {json.dumps(version)}"),
        (root / "sro" / "__init__.py", r'^__version__ = ".*"$', f"__version__ = {json.dumps(version)}"),
    ]:
        text, count = re.subn(pattern, line, path.read_text(), count=1, flags=re.MULTILINE)
        if count != 1:
            raise ValueError(f"{path}: no line matching {pattern}")
        path.write_text(text)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="release.py", description=__doc__.splitlines()[0] if __doc__ else None
    )
    commands = parser.add_subparsers(dest="command", required=True)
    versions = commands.add_parser("versions", help="print SEMVER and PYTHON versions, one a line")
    versions.add_argument("describe", help="git describe output")
    package = commands.add_parser("stamp-package")
    package.add_argument("root", type=Path)
    package.add_argument("--version", required=True)
    stamp = commands.add_parser("stamp-chart")
    stamp.add_argument("chart", type=Path)
    for p in (stamp, image := commands.add_parser("set-image")):
        p.add_argument("--repository", required=True)
        p.add_argument("--digest", default="")
    stamp.add_argument("--version", required=True)
    image.add_argument("kustomization", type=Path)
    image.add_argument("--tag", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "versions":
            found = from_describe(args.describe, fallback=pyproject_version())
            print(found.semver)
            print(found.python)
        elif args.command == "stamp-package":
            stamp_package(args.root, version=args.version)
        elif args.command == "stamp-chart":
            stamp_chart(args.chart, version=args.version, repository=args.repository, digest=args.digest)
        else:
            set_image(args.kustomization, repository=args.repository, tag=args.tag, digest=args.digest)
    except (ValueError, OSError) as exc:
        print(f"release.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
