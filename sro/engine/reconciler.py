"""The SpecialResource engine: one reconcile of one SpecialResource, start to end.

This is the glue between the runtime (caches, API writes), the render core and the pure
planner, in the order of the contract (sections 1, 5 and 6):

1. read the SpecialResource from the cache and parse it (an unprocessable body is reported
   on that object alone, never raised);
2. deletion and ``managementState`` (``engine_teardown``), the finalizer;
3. the operand namespace, which sro creates and never adopts;
4. the recipe, 5. the nodes and the rendered ``DesiredState`` (any recipe error: Degraded,
   nothing written);
6. dependencies and conflicts between SpecialResources (pure checks);
7. the observed state, 8. the plan and its writes (``engine_writes``, ``node_writes``),
   status and Events (``sro.status.writer``).

Level-triggered: every pass recomputes everything from the caches. The only memory kept
between passes is bookkeeping whose loss on a restart costs a retry or a log fetch
(failed-pod retries, fetched log tails, when a transient write failure began).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import structlog

from sro import errors
from sro.engine import namespace as namespace_
from sro.engine import node_writes, pod_logs, ports, recipes, teardown, writes
from sro.hooks import pipeline
from sro.model import desired, views
from sro.model import specialresource as sr_model
from sro.plan import finish, inputs, outcomes, planner
from sro.plan import observed as observed_
from sro.render import recipe as recipe_
from sro.render import values
from sro.status import summary
from sro.status import writer as writer_

log = structlog.get_logger(__name__)

RECIPE_RECHECK = 30.0
"""Seconds before a SpecialResource whose recipe failed, or comes from a drop-in directory,
looks again: directories are not watched, so an added, fixed or edited recipe is noticed
within this time without a restart (reading the cache and the files writes nothing)."""
NAMESPACE_POLL = 2.0
"""Seconds between looks at an operand namespace that is still terminating."""
TRANSIENT_BOUND = 180.0
"""Seconds a transient write failure may persist before it is reported as ApplyFailed."""


@dataclass(kw_only=True)
class _Memory:
    """What one SpecialResource's reconciles hand to the next (see module docstring)."""

    retries: Mapping[desired.ObjectRef, observed_.Retry] = field(default_factory=dict)
    logs: dict[str, Mapping[str, str]] = field(default_factory=dict)
    transient_since: datetime | None = None
    transient_attempts: int = 0
    summary: tuple[object, ...] = ()  # what peers saw of it last time (see _note_summary)


@dataclass(frozen=True, kw_only=True)
class EngineSettings:
    operator: values.OperatorInfo = field(default_factory=values.OperatorInfo)
    proxy: values.ProxySettings = field(default_factory=values.ProxySettings)


class Engine:
    """Reconciles SpecialResources by name; ``reconcile`` returns seconds to requeue after, or None."""

    def __init__(
        self,
        *,
        reader: ports.Reader,
        writer: ports.Writer,
        kinds: ports.Kinds,
        library: recipes.Recipes,
        settings: EngineSettings,
        enqueue: Callable[[str], None] = lambda _key: None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._kinds = kinds
        self._library = library
        self._settings = settings
        self._enqueue = enqueue
        self._clock = clock
        self._status = writer_.StatusWriter(writer)
        self._memory: dict[str, _Memory] = {}
        # name -> (the status the cache showed when this engine last wrote, what it wrote)
        self._written: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}

    async def reconcile(self, key: str) -> float | None:
        body = self._reader.special_resource(key)
        if body is None:
            self._memory.pop(key, None)
            self._written.pop(key, None)
            self._wake_peers(key, reason="deleted")
            return None
        now = self._clock()
        previous = self._previous_status(key, body)
        try:
            sr = sr_model.parse(body)
        except errors.RecipeError as exc:
            generation = int((body.get("metadata") or {}).get("generation") or 0)
            status = finish.degraded(
                previous, previous, reason=exc.reason, message=str(exc), generation=generation, now=now
            )
            await self._write(key, body, previous, status, events=())
            return None
        log.debug("reconciling", sr=sr.name, generation=sr.generation)
        memory = self._memory.setdefault(sr.name, _Memory())
        if sr.deleting:
            return await teardown.finalize(self._teardown_context(sr, previous), now=now)
        if sr_model.FINALIZER not in sr.finalizers:
            await teardown.add_finalizer(self._writer, sr)
        if sr.spec.management_state is sr_model.ManagementState.UNMANAGED:
            status = summary.status_for_management(
                previous, state="Unmanaged", generation=sr.generation, now=now
            )
            await self._write(sr.name, body, previous, status, events=())
            return None
        if sr.spec.management_state is sr_model.ManagementState.REMOVED:
            return await teardown.remove(self._teardown_context(sr, previous), now=now)
        return await self._managed(sr, body, previous, memory, now=now)

    # -- the managed path ---------------------------------------------------------

    async def _managed(
        self,
        sr: sr_model.SpecialResource,
        body: Mapping[str, Any],
        previous: Mapping[str, Any],
        memory: _Memory,
        *,
        now: datetime,
    ) -> float | None:
        def fail(reason: str, message: str) -> dict[str, Any]:
            return finish.degraded(
                previous, previous, reason=reason, message=message, generation=sr.generation, now=now
            )

        owner = await namespace_.owner(self._reader, self._writer, sr)
        if owner is not None and owner != sr.name:
            message = (
                f"namespace {sr.spec.namespace} exists and was not created for this SpecialResource; "
                "sro never adopts a namespace"
            )
            await self._write(sr.name, body, previous, fail("NamespaceInUse", message), events=())
            return RECIPE_RECHECK
        cached_namespace = self._reader.namespace(sr.spec.namespace)
        if cached_namespace is not None and cached_namespace.deleting:
            # Ours, still going away after a removal: nothing can be created in it until it is gone.
            log.info("waiting for the operand namespace to finish terminating", sr=sr.name)
            return NAMESPACE_POLL
        try:
            recipe = self._library.get(sr.spec.recipe)
        except errors.RecipeError as exc:
            await self._write(sr.name, body, previous, fail(exc.reason, str(exc)), events=())
            return RECIPE_RECHECK

        all_nodes = self._reader.nodes()
        peers = self._peers(sr, recipe, all_nodes)
        me = next(p for p in peers if p.name == sr.name)
        self._note_summary(sr.name, me, memory)
        conflict = inputs.conflict_report(sr.name, peers)
        deps = inputs.dependency_report(sr.name, peers)
        pool = [n for n in all_nodes if n.name not in conflict.excluded]
        try:
            rendered = await self._render(sr, recipe, pool)
            wanted = inputs.excluding(inputs.with_priority_classes(rendered, sr), conflict.excluded)
        except errors.RecipeError as exc:
            await self._write(sr.name, body, previous, fail(exc.reason, str(exc)), events=())
            return RECIPE_RECHECK

        report = await namespace_.create(self._writer, sr) if owner is None else ()
        for api_version, kind in sorted({(o.ref.api_version, o.ref.kind) for o in wanted.objects}):
            await self._kinds.ensure_watched(api_version, kind)

        seen = self._observe(
            sr, wanted=wanted, all_nodes=all_nodes, recipe=recipe, previous=previous, memory=memory
        )
        planned = planner.plan(wanted, seen, now=now)
        memory.retries = dict(planned.retries)

        live_views = {v.ref: v for v in self._reader.owned(sr.name)}
        opening = writes.opening_states(wanted, seen.objects, planned.apply)
        applied = await writes.apply_objects(
            self._writer,
            planned.apply,
            sr=sr,
            live=live_views,
            present=seen.objects,
            opening=opening,
            states=wanted.states,
        )
        stale_pods = writes.outdated_pods(seen.objects, seen.pods)
        deleted = await writes.delete_objects(self._writer, (*planned.delete, *stale_pods), sr_name=sr.name)
        node_failures = await node_writes.carry_out(
            self._writer,
            planned.node_labels,
            sr_name=sr.name,
            nodes=all_nodes,
            blocked=applied.blocked_states,
        )
        fetched = await pod_logs.fetch(self._writer, planned.logs_needed, memory.logs)

        failures = (
            *report,
            *applied.failures,
            *deleted.failures,
            *(outcomes.Failure(state=f"node {n}", ref=None, error=e) for n, e in node_failures),
        )
        status, retry_in = finish.finish(
            planned.status,
            previous,
            conflict=conflict,
            deps=deps,
            failures=failures,
            transient=self._transient(memory, failures, now=now),
            generation=sr.generation,
            now=now,
        )
        events = finish.events_for(previous, status, planned)
        await self._write(sr.name, body, previous, status, events=events)
        delays = [d for d in (planned.requeue_after, retry_in, 0.5 if fetched else None) if d is not None]
        if any(f.permanent for f in failures) or recipe.source is recipe_.Source.DIRECTORY:
            delays.append(RECIPE_RECHECK)  # drop-in directories are not watched: look again
        return min(delays) if delays else None

    # -- steps ----------------------------------------------------------------------

    def _peers(
        self, sr: sr_model.SpecialResource, recipe: recipe_.Recipe, nodes: Sequence[views.NodeView]
    ) -> list[inputs.PeerSummary]:
        """Every parseable SpecialResource, summarised for dependency and conflict checks."""
        out = [inputs.summarise(sr, recipe_selector=recipe.node_selector, nodes=nodes)]
        for other_body in self._reader.special_resources():
            try:
                other = sr_model.parse(other_body)
            except errors.RecipeError:
                continue
            if other.name == sr.name:
                continue
            try:
                selector = self._library.get(other.spec.recipe).node_selector
            except errors.RecipeError:
                selector = {}
            out.append(inputs.summarise(other, recipe_selector=selector, nodes=nodes))
        return out

    def _note_summary(self, name: str, me: inputs.PeerSummary, memory: _Memory) -> None:
        """When what others see of this SpecialResource changes, they must look again."""
        summary = (me.recipe, me.created, me.dependencies, me.nodes, me.managed)
        if summary != memory.summary:
            memory.summary = summary
            self._wake_peers(name, reason="selection changed")

    def _wake_peers(self, name: str, *, reason: str) -> None:
        for other_body in self._reader.special_resources():
            other_name = str((other_body.get("metadata") or {}).get("name", ""))
            if other_name and other_name != name:
                self._enqueue(other_name)
        log.debug("peers woken", sr=name, reason=reason)

    async def _render(
        self, sr: sr_model.SpecialResource, recipe: recipe_.Recipe, pool: list[views.NodeView]
    ) -> desired.DesiredState:
        version, _, _ = self._kinds.cluster_version()

        def render() -> desired.DesiredState:
            return pipeline.render_desired(
                sr,
                recipe,
                pool,
                cluster_version=version,
                operator_info=self._settings.operator,
                proxy=self._settings.proxy,
                is_namespaced=self._kinds.is_namespaced,
                is_served=self._kinds.is_served,
            )

        try:
            return render()
        except errors.RecipeError:
            # A kind installed since discovery was last read would look unserved: look again once.
            if not await self._kinds_refreshed():
                raise
            return render()

    async def _kinds_refreshed(self) -> bool:
        refresh = getattr(self._kinds, "refresh", None)
        if refresh is None:
            return False
        return bool(await refresh())

    def _observe(
        self,
        sr: sr_model.SpecialResource,
        *,
        wanted: desired.DesiredState,
        all_nodes: Sequence[views.NodeView],
        recipe: recipe_.Recipe,
        previous: Mapping[str, Any],
        memory: _Memory,
    ) -> observed_.Observed:
        selected = frozenset(wanted.nodes)
        # The operand namespace is sro's but not the recipe's: the planner must not see it
        # as an object no longer desired (teardown sees it and deletes it last).
        owned = [v for v in self._reader.owned(sr.name) if v.ref != namespace_.ref(sr)]
        namespace_pods = self._reader.pods(sr.spec.namespace)
        objects = {
            **inputs.live_objects(owned),
            **inputs.pod_objects(inputs.owned_pods(namespace_pods, sr_name=sr.name)),
        }
        pods = inputs.relevant_pods(namespace_pods, owned=objects, sr_name=sr.name)
        live_uids = {p.uid for p in pods}
        memory.logs = {uid: tails for uid, tails in memory.logs.items() if uid in live_uids}
        return observed_.Observed(
            generation=sr.generation,
            nodes={n.name: n for n in all_nodes if n.name in selected},
            departed=inputs.departed(sr.name, all_nodes, selected=selected),
            objects=objects,
            pods=pods,
            logs=dict(memory.logs),
            retries=memory.retries,
            previous_status=previous,
            taints=inputs.sr_taints(sr),
            recipe_source=str(recipe.source),
        )

    def _transient(
        self, memory: _Memory, failures: tuple[outcomes.Failure, ...], *, now: datetime
    ) -> finish.Transient | None:
        if not any(not f.permanent for f in failures):
            memory.transient_since, memory.transient_attempts = None, 0
            return None
        if memory.transient_since is None:
            memory.transient_since = now
        memory.transient_attempts += 1
        persisted = (now - memory.transient_since).total_seconds()
        return finish.Transient(
            since=memory.transient_since,
            attempts=memory.transient_attempts,
            expired=persisted > TRANSIENT_BOUND,
        )

    def _teardown_context(
        self, sr: sr_model.SpecialResource, previous: Mapping[str, Any]
    ) -> teardown.Context:
        return teardown.Context(
            sr=sr, previous=previous, reader=self._reader, writer=self._writer, status=self._status
        )

    def _previous_status(self, name: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """The status this SpecialResource has now: the cache's, unless the cache still shows
        what was there before this engine's last write (a reconcile can run before the watch
        brings that write back), in which case the status written. Without this, a burst of
        reconciles right after a transition would write the status and post its Events twice.
        """
        cached: Mapping[str, Any] = body.get("status") or {}
        memo = self._written.get(name)
        if memo is not None and writer_.unchanged(cached, memo[0]) and not writer_.unchanged(cached, memo[1]):
            return memo[1]
        return cached

    async def _write(
        self,
        name: str,
        body: Mapping[str, Any],
        previous: Mapping[str, Any],
        status: Mapping[str, Any],
        *,
        events: Sequence[writer_.EventLike],
    ) -> None:
        """Status first (only if changed), then the Events that status records."""
        written = await self._status.write_status(name=name, current=previous, status=status)
        if written:
            self._written[name] = (dict(body.get("status") or {}), dict(status))
        if written and events:
            uid = str((body.get("metadata") or {}).get("uid", ""))
            await self._status.emit(sr_name=name, sr_uid=uid, events=events)
