"""Fails when a module under sro/ is in no layer of .importlinter's layers contract.

import-linter checks only the modules a contract names, so a new package left out of the
layers would be free to import anything. A module is covered when it, or a package
containing it, is listed in a layer. Usage: python hack/lib/layers.py [REPO]
"""

from __future__ import annotations

import configparser
import sys
from pathlib import Path


def listed(config: Path) -> set[str]:
    parser = configparser.ConfigParser()
    parser.read(config)
    entries: set[str] = set()
    for section in parser.sections():
        if parser.get(section, "type", fallback="") != "layers":
            continue
        for line in parser.get(section, "layers").splitlines():
            entries.update(part.strip() for part in line.replace(":", "|").split("|") if part.strip())
    return entries


def modules(root: Path) -> list[str]:
    """Every module under sro/; a package's ``__init__`` only if it imports something (a
    charter that is only a docstring can break no layer)."""
    out = []
    for path in sorted((root / "sro").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
            if not any(line.startswith(("import ", "from ")) for line in path.read_text().splitlines()):
                continue
        out.append(".".join(parts))
    return out


def uncovered(root: Path) -> list[str]:
    layers = listed(root / ".importlinter")
    missing = []
    for module in modules(root):
        if module == "sro":  # the root package holds only the version
            continue
        prefixes = {".".join(module.split(".")[:i]) for i in range(2, module.count(".") + 2)}
        if not prefixes & layers:
            missing.append(module)
    return missing


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    missing = uncovered(root)
    for module in missing:
        print(f".importlinter: {module} is in no layer of the layers contract")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
