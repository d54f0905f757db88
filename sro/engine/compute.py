"""The CPU-heavy pure steps of a reconcile, run off the event loop.

One event loop serves every reconcile, the watches, ``/healthz`` and the Lease renewal.
Loading a recipe, rendering it (Jinja2 and YAML, up to the render budget's 5 s for a
hostile recipe) and planning over thousands of nodes are pure computations on values the
engine has already read, so they run on a worker thread (``asyncio.to_thread``) and the
loop goes on answering while they burn. Their budgets are unchanged: the render budget
and the value placeholders live in context variables, which ``to_thread`` copies, so each
render sees its own.

What crosses to the thread is plain values (frozen records, the nodes read from the
cache, a recipe loader that reads no cache) and what comes back is a new value; nothing
mutable is shared with the loop while a step runs. The recipe libraries' memory of
compiled versions is the one shared thing, and it is guarded by a lock
(``engine.recipes``, ``render.sources``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sro import errors
from sro.hooks import pipeline
from sro.model import desired, views
from sro.model import specialresource as sr_model
from sro.plan import actions, inputs, observed, planner
from sro.render import recipe as recipe_


async def load_recipe(loader: Callable[[], recipe_.Recipe]) -> recipe_.Recipe:
    """The recipe ``loader`` loads (reading files, compiling templates), off the loop."""
    return await asyncio.to_thread(loader)


@dataclass(frozen=True, kw_only=True)
class Rendered:
    """A render and what it was rendered from (``pipeline.render_inputs``)."""

    inputs: tuple[object, ...]
    state: desired.DesiredState


async def render(
    sr: sr_model.SpecialResource,
    recipe: recipe_.Recipe,
    nodes: Sequence[views.NodeView],
    *,
    env: pipeline.Environment,
    facts: object = None,
    last: Rendered | None = None,
) -> Rendered:
    """``pipeline.render_desired`` off the loop, under ``env.limits`` as ever; ``last``
    again, without rendering, when it was rendered from equal inputs. Nodes advancing
    through states change no input, so at a thousand nodes most passes render nothing;
    a render that runs takes ``last``'s unchanged per-node pods again."""

    def run() -> Rendered:
        inputs = pipeline.render_inputs(sr, recipe, nodes, env=env, facts=facts)
        if last is not None and last.inputs == inputs:
            return last
        before = last.state if last is not None else None
        return Rendered(inputs=inputs, state=pipeline.render_desired(sr, recipe, nodes, env=env, last=before))

    return await asyncio.to_thread(run)


async def plan(wanted: desired.DesiredState, seen: observed.Observed, *, now: datetime) -> actions.Plan:
    """``planner.plan`` off the loop (log matching included)."""
    return await asyncio.to_thread(planner.plan, wanted, seen, now=now)


async def summarise_peers(
    sr: sr_model.SpecialResource,
    recipe: recipe_.Recipe,
    others: Sequence[tuple[sr_model.SpecialResource, Callable[[], recipe_.Recipe]]],
    nodes: Sequence[views.NodeView],
) -> list[inputs.PeerSummary]:
    """``sr`` first, then each other SpecialResource with its recipe's default selector
    (empty if that recipe cannot be loaded), summarised for conflict and dependency checks."""

    def summarise() -> list[inputs.PeerSummary]:
        out = [inputs.summarise(sr, recipe_selector=recipe.node_selector, nodes=nodes)]
        for other, load in others:
            try:
                selector = load().node_selector
            except errors.RecipeError:
                selector = {}
            out.append(inputs.summarise(other, recipe_selector=selector, nodes=nodes))
        return out

    return await asyncio.to_thread(summarise)
