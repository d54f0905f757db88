"""Which recipe a SpecialResource gets: ConfigMap drop-ins, then directories, then built-in.

An administrator adds or overrides recipes without rebuilding the image, as directories
given to the operator (``sro.render.sources``) or as ConfigMaps in the operator's
namespace labelled ``sro.dev/recipe: <name>``. The ConfigMaps come from a watched cache,
so an added or edited one is noticed at once (the engine is woken for the SpecialResources
that use it); each ConfigMap version is compiled once, and one that fails fails from memory
after that (``sources.Compiled``). A ConfigMap recipe that fails validation is reported on
the SpecialResources using it (``RecipeInvalid``), never silently replaced by another
recipe of the same name.

Compiling a recipe is CPU work its author controls, so the engine does it off the event
loop: ``loader`` reads what it needs from the cache on the caller's thread (the event
loop's) and returns a call that touches no cache and may run on any thread.
"""

from __future__ import annotations

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
        self._compiled = sources.Compiled()

    def get(self, name: str) -> recipe_.Recipe:
        return self.loader(name)()

    def loader(self, name: str) -> Callable[[], recipe_.Recipe]:
        """Recipe ``name`` as a call that reads no cache (any thread may make it): the
        ConfigMap, if one holds the recipe, is read now, on the caller's thread."""
        shown = [v for v in self._configmaps() if v.labels.get(sources.RECIPE_LABEL)]
        self._compiled.retain({v.name for v in shown})  # what was compiled of a deleted one goes
        found = [v for v in shown if v.labels.get(sources.RECIPE_LABEL) == name]
        candidates = sorted(found, key=lambda v: v.name)
        if not candidates:
            library = self._library
            return lambda: library.get(name)
        view = candidates[0]  # several for one name: the first by ConfigMap name, always the same
        configmap, version = view.name, view.resource_version
        data = {str(k): str(v) for k, v in (view.body.get("data") or {}).items()}
        namespace, compiled = self._namespace, self._compiled
        return lambda: compiled.get(
            configmap,
            version,
            lambda: sources.configmap_recipe(name, data, namespace=namespace, configmap=configmap),
        )

    def compiled(self, name: str) -> recipe_.Recipe | None:
        """The newest version of recipe ``name`` already compiled, or None: what the event
        loop's own callers (the node watch's mapper) may use, since it compiles nothing."""
        found = sorted(
            (v for v in self._configmaps() if v.labels.get(sources.RECIPE_LABEL) == name),
            key=lambda v: v.name,
        )
        if not found:
            return self._library.compiled(name)
        return self._compiled.newest(found[0].name)
