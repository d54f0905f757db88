"""What SpecialResources see of each other, and waking the others when that changes.

A SpecialResource's plan reads its peers (``spec.dependsOn``, two claiming one node:
``sro.plan.inputs.peers``), so a change in one that others would see (its recipe, its
selection, its dependencies, whether it is managed) must bring their next pass, and so
must its deletion. Each pass summarises every parseable SpecialResource (their recipes
loaded off the event loop, ``compute.summarise_peers``) and compares its own summary with
the one it published last (kept in its ``memory``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import structlog

from sro import errors
from sro.engine import compute, ports, recipes
from sro.engine import memory as memory_
from sro.model import specialresource as sr_model
from sro.model import views
from sro.plan import inputs
from sro.render import recipe as recipe_

log = structlog.get_logger(__name__)


class Peers:
    """The SpecialResources in the cache, read for one pass and woken when one changes."""

    def __init__(
        self, *, reader: ports.Reader, library: recipes.Recipes, enqueue: Callable[[str], None]
    ) -> None:
        self._reader = reader
        self._library = library
        self._enqueue = enqueue

    async def summaries(
        self, sr: sr_model.SpecialResource, recipe: recipe_.Recipe, nodes: Sequence[views.NodeView]
    ) -> list[inputs.PeerSummary]:
        """This SpecialResource first, then every other parseable one, summarised for
        dependency and conflict checks (their recipes loaded off the loop)."""
        others: list[tuple[sr_model.SpecialResource, Callable[[], recipe_.Recipe]]] = []
        for other_body in self._reader.special_resources():
            try:
                other = sr_model.parse(other_body)
            except errors.RecipeError:
                continue
            if other.name != sr.name:
                others.append((other, self._library.loader(other.spec.recipe)))
        return await compute.summarise_peers(sr, recipe, others, nodes)

    def note(self, name: str, me: inputs.PeerSummary, memory: memory_.Memory) -> None:
        """When what others see of this SpecialResource changes, they must look again."""
        seen_by_peers = (me.recipe, me.created, me.dependencies, me.nodes, me.managed)
        if seen_by_peers != memory.summary:
            memory.summary = seen_by_peers
            self.wake(name, reason="selection changed")

    def wake(self, name: str, *, reason: str) -> None:
        """Queue every SpecialResource but ``name``."""
        for other_body in self._reader.special_resources():
            other_name = str((other_body.get("metadata") or {}).get("name", ""))
            if other_name and other_name != name:
                self._enqueue(other_name)
        log.debug("peers woken", sr=name, reason=reason)
