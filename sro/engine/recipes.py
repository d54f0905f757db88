"""Which recipe a SpecialResource gets: ConfigMap drop-ins, then directories, then built-in.

An administrator adds or overrides recipes without rebuilding the image, as directories
given to the operator (``sro.render.sources``) or as ConfigMaps in the operator's
namespace labelled ``sro.dev/recipe: <name>``. The ConfigMaps come from a watched cache,
so an added or edited one is noticed at once (the engine is woken for the SpecialResources
that use it); each ConfigMap version is compiled once. A ConfigMap recipe that fails
validation is reported on the SpecialResources using it (``RecipeInvalid``), never
silently replaced by another recipe of the same name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from sro.cache import projections
from sro.render import recipe as recipe_
from sro.render import sources


class Recipes(Protocol):
    def get(self, name: str) -> recipe_.Recipe: ...


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

    def get(self, name: str) -> recipe_.Recipe:
        found = [v for v in self._configmaps() if v.labels.get(sources.RECIPE_LABEL) == name]
        candidates = sorted(found, key=lambda v: v.name)
        if not candidates:
            return self._library.get(name)
        view = candidates[0]  # several for one name: the first by ConfigMap name, always the same
        key = (view.name, view.resource_version)
        cached = self._compiled.get(key)
        if cached is None:
            data = {str(k): str(v) for k, v in (view.body.get("data") or {}).items()}
            cached = sources.configmap_recipe(name, data, namespace=self._namespace, configmap=view.name)
            self._compiled = {k: v for k, v in self._compiled.items() if k[0] != view.name}
            self._compiled[key] = cached
        return cached
