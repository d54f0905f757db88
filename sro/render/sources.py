"""Where recipes are found: built-in assets, then drop-in directories that override them.

The built-in recipes ship in ``assets/``; an administrator adds or overrides recipes
without rebuilding the image by giving the operator directories (and, through the
engine, ConfigMaps). A drop-in with the same name as a built-in wins, and the recipe
records which source it came from so status can say so. ``Library`` compiles each
recipe version once: a recipe is reloaded only when the digest of its files changes.
A version that fails is remembered as failing too (``Compiled``): refusing a hostile
recipe can cost as much as compiling one (a flow collection nested thousands deep takes
the YAML scanner about a second), and every SpecialResource's pass asks for the recipes
of all the others, so a broken recipe must cost that once, not on every pass of every
SpecialResource. The operator loads recipes on worker threads (off its event loop), so
the memory of compiled versions is guarded by a lock; reading and compiling happen outside it.
"""

from __future__ import annotations

import copy
import hashlib
import os
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sro import errors
from sro.render import recipe as recipe_

ASSETS_ENV = "SRO_ASSETS"


def builtin_directory() -> Path:
    """The built-in recipes: ``$SRO_ASSETS`` or the ``assets/`` directory next to the package."""
    configured = os.environ.get(ASSETS_ENV)
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parent.parent.parent / "assets"


@dataclass(frozen=True, kw_only=True)
class SearchPath:
    """Recipe directories in precedence order: drop-ins first (earlier wins), built-in last."""

    directories: tuple[Path, ...] = ()
    builtin: Path | None = None

    def candidates(self) -> list[tuple[Path, recipe_.Source]]:
        found = [(d, recipe_.Source.DIRECTORY) for d in self.directories]
        if self.builtin is not None:
            found.append((self.builtin, recipe_.Source.BUILT_IN))
        return found

    def locate(self, name: str) -> tuple[Path, recipe_.Source]:
        """The directory of recipe ``name`` and its source; RecipeNotFound if none has it,
        RecipeInvalid if the first directory of that name has no ``recipe.yaml``."""
        if "/" in name or name in {"", ".", ".."}:
            raise errors.RecipeNotFound(f"recipe {name!r} is a name, never a path")
        for root, source in self.candidates():
            if (root / name / recipe_.RECIPE_FILE).is_file():
                return root / name, source
            if (root / name).is_dir():  # says what is wrong; never lets a later one stand in
                raise errors.RecipeInvalid(
                    f"{recipe_.RECIPE_FILE} is missing: a recipe directory holds {recipe_.RECIPE_FILE} "
                    "and one directory per state",
                    location=errors.Location(file=f"{root / name}/{recipe_.RECIPE_FILE}"),
                )
        looked = ", ".join(str(root) for root, _ in self.candidates()) or "nowhere"
        raise errors.RecipeNotFound(
            f"no recipe named {name!r} (looked in {looked})", location=errors.Location(file=name)
        )

    def names(self) -> list[str]:
        """Every recipe name available, sorted."""
        seen: set[str] = set()
        for root, _ in self.candidates():
            if root.is_dir():
                seen.update(p.parent.name for p in root.glob(f"*/{recipe_.RECIPE_FILE}"))
        return sorted(seen)


def default_search_path(directories: Sequence[Path] = ()) -> SearchPath:
    return SearchPath(directories=tuple(directories), builtin=builtin_directory())


class Compiled:
    """What compiling the newest version of each recipe source gave: the recipe, or the
    ``RecipeError`` it raised, so neither is worked out twice for one version. A source is
    a directory or a ConfigMap, a version the digest of its files or its resourceVersion;
    a new version replaces the old. Safe to use from several threads at once."""

    def __init__(self) -> None:
        self._outcomes: dict[str, tuple[str, recipe_.Recipe | errors.RecipeError]] = {}
        self._good: dict[str, recipe_.Recipe] = {}  # the newest version of each that compiled
        self._lock = threading.Lock()

    def get(self, source: str, version: str, compile_: Callable[[], recipe_.Recipe]) -> recipe_.Recipe:
        """``compile_()`` of this version, made once; raises what it raised, every time."""
        with self._lock:
            kept = self._outcomes.get(source)
        if kept is None or kept[0] != version:
            outcome: recipe_.Recipe | errors.RecipeError
            try:
                outcome = compile_()
            except errors.RecipeError as exc:
                outcome = copy.copy(exc)  # without its traceback, which holds the parser's frames
            with self._lock:
                self._outcomes[source] = kept = (version, outcome)
                if isinstance(outcome, recipe_.Recipe):
                    self._good[source] = outcome
        if isinstance(kept[1], errors.RecipeError):
            raise copy.copy(kept[1])  # a fresh exception for each raise: no traceback is shared
        return kept[1]

    def newest(self, source: str) -> recipe_.Recipe | None:
        """The newest version of ``source`` that compiled, or None; compiles nothing."""
        with self._lock:
            return self._good.get(source)

    def retain(self, sources: Collection[str]) -> None:
        """Forget every source not in ``sources`` (ConfigMaps deleted since): what was
        compiled of a recipe that is gone is no use, and a namespace whose recipe
        ConfigMaps come and go under new names would otherwise keep every one."""
        with self._lock:
            for gone in [s for s in self._outcomes if s not in sources]:
                del self._outcomes[gone]
            for gone in [s for s in self._good if s not in sources]:
                del self._good[gone]


class Library:
    """Recipes by name, compiled once per version of their files."""

    def __init__(self, search: SearchPath) -> None:
        self.search = search
        self._compiled = Compiled()

    def get(self, name: str) -> recipe_.Recipe:
        """The current recipe ``name``; raises RecipeNotFound or the recipe's first error.
        Safe to call from several threads at once."""
        path, source = self.search.locate(name)
        files = recipe_.files_from_directory(path)
        return self._compiled.get(
            str(path), _digest(files), lambda: recipe_.load(path.name, files, source=source, origin=str(path))
        )

    def compiled(self, name: str) -> recipe_.Recipe | None:
        """The newest version of recipe ``name`` that compiled, or None; reads no recipe
        file and compiles nothing (for callers on the operator's event loop)."""
        try:
            path, _ = self.search.locate(name)
        except errors.RecipeError:
            return None
        return self._compiled.newest(str(path))


def _digest(files: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    return digest.hexdigest()


RECIPE_LABEL = "sro.dev/recipe"
"""ConfigMaps in the operator's namespace with this label hold drop-in recipes (value: the name)."""


def configmap_recipe(name: str, data: Mapping[str, str], *, namespace: str, configmap: str) -> recipe_.Recipe:
    """Recipe ``name`` from a ConfigMap's data (``recipe.yaml`` and ``<state>__<file>.yaml`` keys)."""
    origin = f"configmap/{namespace}/{configmap}"
    files = recipe_.files_from_configmap(data, origin=origin)
    return recipe_.load(name, files, source=recipe_.Source.CONFIGMAP, origin=origin)
