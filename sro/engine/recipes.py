"""Which recipe a SpecialResource gets: ConfigMap drop-ins, then directories, then built-in.

An administrator adds or overrides recipes without rebuilding the image, as directories
given to the operator (``sro.render.sources``) or as ConfigMaps in the operator's
namespace labelled ``sro.dev/recipe: <name>``. The ConfigMaps come from a watched cache,
so an added or edited one is noticed at once (the engine is woken for the SpecialResources
that use it); each ConfigMap version is compiled once. A ConfigMap recipe that fails
validation is reported on the SpecialResources using it (``RecipeInvalid``), never
silently replaced by another recipe of the same name.

Compiling a recipe is CPU work its author controls, so the engine does it off the event
loop: ``loader`` reads what it needs from the cache on the caller's thread (the event
loop's) and returns a call that touches no cache and may run on any thread; the memory
of compiled versions is guarded by a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from sro.cache import projections
from sro.render import recipe as recipe_
from sro.render import sources


class Recipes(Protocol):
    def get(self, name: str) -> recipe_.Recipe: ...

    def loader(self, name: str) -> Callable[[], recipe_.Recipe]: ...

    def compiled(self, name: str) -> recipe_.Recipe | None: ...


class Catalog:
    """``get(name)``: the ConfigMap recipe of that name if there is one, else the library's."""

    def __init__(
        self,
        library: sources.Library,
        *,
        configmaps: Callable[[], Sequence[projections.ObjectView]],
        namespace: str,
    ) -> None:
        self._library = library
        self._configmaps = configmaps
        self._namespace = namespace
        self._compiled: dict[tuple[str, str], recipe_.Recipe] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> recipe_.Recipe:
        return self.loader(name)()

    def loader(self, name: str) -> Callable[[], recipe_.Recipe]:
        """Recipe ``name`` as a call that reads no cache (any thread may make it): the
        ConfigMap, if one holds the recipe, is read now, on the caller's thread."""
        found = [v for v in self._configmaps() if v.labels.get(sources.RECIPE_LABEL) == name]
        candidates = sorted(found, key=lambda v: v.name)
        if not candidates:
            library = self._library
            return lambda: library.get(name)
        view = candidates[0]  # several for one name: the first by ConfigMap name, always the same
        key = (view.name, view.resource_version)
        data = {str(k): str(v) for k, v in (view.body.get("data") or {}).items()}
        return lambda: self._compile(name, key, data)

    def compiled(self, name: str) -> recipe_.Recipe | None:
        """The newest version of recipe ``name`` already compiled, or None: what the event
        loop's own callers (the node watch's mapper) may use, since it compiles nothing."""
        found = sorted(
            (v for v in self._configmaps() if v.labels.get(sources.RECIPE_LABEL) == name),
            key=lambda v: v.name,
        )
        if not found:
            return self._library.compiled(name)
        with self._lock:
            return next((v for k, v in self._compiled.items() if k[0] == found[0].name), None)

    def _compile(self, name: str, key: tuple[str, str], data: dict[str, str]) -> recipe_.Recipe:
        with self._lock:
            cached = self._compiled.get(key)
        if cached is None:
            cached = sources.configmap_recipe(name, data, namespace=self._namespace, configmap=key[0])
            with self._lock:
                self._compiled = {k: v for k, v in self._compiled.items() if k[0] != key[0]}
                self._compiled[key] = cached
        return cached
