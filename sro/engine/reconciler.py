"""The SpecialResource engine: one reconcile of one SpecialResource, start to end.

It reads as the contract's reconcile (sections 1, 5 and 6): **read** the SpecialResource,
its recipe, the nodes and the peers from the caches; **render** the ``DesiredState``
(``sro.hooks.pipeline``); **plan** (``sro.plan.planner``: every decision); **execute** the
plan's writes (``writes``, ``node_writes``, ``pod_logs``); **finish** (``sro.plan.finish``
folds what the writes reported into the final status) and write status and Events
(``status_writes``). Deletion and ``managementState: Removed`` go to ``teardown``, which
executes ``planner.plan_teardown`` the same way. Nothing here decides: a branch that
chooses belongs in ``sro.plan``. Loading the recipe, rendering and planning are pure and
may be heavy, so they run off the event loop (``compute``).

Level-triggered: every pass recomputes everything from the caches; what one pass hands the
next is ``memory``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import structlog

from sro import errors
from sro.engine import (
    compute,
    execute,
    pod_logs,
    ports,
    preflight,
    recipes,
    reporting,
    status_writes,
    steps,
    teardown,
    watched,
    waves,
)
from sro.engine import memory as memory_
from sro.engine import namespace as namespace_
from sro.engine import peers as peers_
from sro.hooks import pipeline
from sro.model import desired, progress, recipe_policy, views
from sro.model import specialresource as sr_model
from sro.plan import (
    actions,
    finish,
    inputs,
    log_polls,
    node_loss,
    outcomes,
    planner,
    pod_security,
    pods_seen,
)
from sro.plan import observed as observed_
from sro.render import recipe as recipe_
from sro.render import values

log = structlog.get_logger(__name__)

NAMESPACE_POLL = 2.0
"""Seconds between looks at an operand namespace that is still terminating."""


@dataclass(frozen=True, kw_only=True)
class EngineSettings:
    operator: values.OperatorInfo = field(default_factory=values.OperatorInfo)
    proxy: values.ProxySettings = field(default_factory=values.ProxySettings)
    policy: recipe_policy.RecipePolicy = recipe_policy.DEFAULT
    write_concurrency: int = waves.DEFAULT_LIMIT
    log_reads_per_second: float = log_polls.FLEET_READS_PER_SECOND


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
        flaps: Callable[[node_loss.Decision], None] = lambda _loss: None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        images: ports.Images | None = None,
        timed: steps.Note | None = None,
    ) -> None:
        self._images = images  # None: no registry is asked
        self._timed = timed  # each step's seconds, for the metrics
        self._reader = reader
        self._writer = writer
        self._kinds = kinds
        self._library = library
        self._settings = settings
        self._enqueue = enqueue
        self._peers = peers_.Peers(reader=reader, library=library, enqueue=enqueue)
        self._flaps = flaps
        self._clock = clock
        self._status = status_writes.StatusWriter(writer, clock=clock)
        self._report = reporting.Reporter(reader=reader, status=self._status, clock=clock)
        self._memory: dict[str, memory_.Memory] = {}
        self.state_nodes: dict[str, Mapping[str, Mapping[progress.Phase, int]]] = {}
        """name -> state -> phase -> nodes, from the last walk (the per-state node gauge)."""
        self.computing: dict[str, float] = {}
        """name -> seconds this pass spent computing (``steps.Laps.computing``), once it has
        planned; the caller takes it for the queue's pace. Cleared as each pass starts, so
        a pass that stops before planning leaves none."""

    def status_is_own(self, name: str, body: Mapping[str, Any]) -> bool:
        """Whether ``body`` shows a status this engine wrote (``StatusWriter.is_own``)."""
        return self._status.is_own(name, body)

    async def reconcile(self, key: str) -> float | None:
        self.computing.pop(key, None)
        body = self._reader.special_resource(key)
        if body is None:
            gone = self._memory.pop(key, None)
            if gone is not None:
                gone.close()
            self._report.forget(key)
            self.state_nodes.pop(key, None)
            self._peers.wake(key, reason="deleted")
            return None
        now = self._clock()
        previous = self._report.previous(key, body)
        try:
            sr = sr_model.parse(body)
        except errors.RecipeError as exc:
            generation = int((body.get("metadata") or {}).get("generation") or 0)
            refused = planner.plan_refused(
                previous=previous,
                reason=exc.reason,
                message=str(exc),
                generation=generation,
                now=now,
                recheck=False,
            )
            return await self._report.conclude(key, body, previous=previous, status=refused.status)
        log.debug("reconciling", sr=sr.name, generation=sr.generation)
        memory = self._memory.get(sr.name)
        if memory is None:
            name = sr.name
            memory = self._memory[name] = memory_.Memory(
                reads=pod_logs.Reads(wake=lambda: self._enqueue(name))
            )
        if sr.deleting or sr.spec.management_state is sr_model.ManagementState.REMOVED:
            self.state_nodes.pop(sr.name, None)
        if sr.deleting:
            return await teardown.finalize(self._teardown_context(sr, previous), now=now)
        if sr_model.FINALIZER not in sr.finalizers:
            await teardown.add_finalizer(self._writer, sr)
        if sr.spec.management_state is sr_model.ManagementState.UNMANAGED:
            hands_off = planner.plan_unmanaged(previous=previous, generation=sr.generation, now=now)
            return await self._report.conclude(sr.name, body, previous=previous, status=hands_off.status)
        if sr.spec.management_state is sr_model.ManagementState.REMOVED:
            return await teardown.remove(self._teardown_context(sr, previous), now=now)
        return await self._managed(sr, body, previous, memory, now=now)

    # -- the managed path: read, render, plan, execute, finish ------------------------

    async def _managed(
        self,
        sr: sr_model.SpecialResource,
        body: Mapping[str, Any],
        previous: Mapping[str, Any],
        memory: memory_.Memory,
        *,
        now: datetime,
    ) -> float | None:
        async def refuse(reason: str, message: str) -> float | None:
            refused = planner.plan_refused(
                previous=previous, reason=reason, message=message, generation=sr.generation, now=now
            )
            return await self._report.conclude(
                sr.name, body, previous=previous, status=refused.status, requeue_after=refused.requeue_after
            )

        laps = steps.Laps(self._timed)
        # read
        owner = await namespace_.owner(self._reader, self._writer, sr)
        if owner is False:
            return await refuse(
                "NamespaceInUse",
                f"namespace {sr.spec.namespace} exists and was not created for this SpecialResource; "
                "sro never adopts a namespace",
            )
        cached_namespace = self._reader.namespace(sr.spec.namespace)
        if cached_namespace is not None and cached_namespace.deleting:
            # Ours, still going away after a removal: nothing can be created in it until it is gone.
            log.info("waiting for the operand namespace to finish terminating", sr=sr.name)
            return NAMESPACE_POLL
        try:
            recipe = await compute.load_recipe(self._library.loader(sr.spec.recipe))
        except errors.RecipeError as exc:
            return await refuse(exc.reason, str(exc))
        all_nodes = self._reader.nodes()
        nodes_at = self._reader.cursors()[0]  # what the walk will have read of the node cache
        summaries = await self._peers.summaries(sr, recipe, all_nodes)
        self._peers.note(sr.name, summaries[0], memory)
        peers = inputs.peers(sr.name, summaries)
        loss = node_loss.for_sr(sr, all_nodes, memory.held, recipe_selector=recipe.node_selector, now=now)
        memory.held, nodes = loss.memory, loss.nodes
        self._flaps(loss)

        laps.lap("read")

        # render
        try:
            wanted = await self._render(sr, recipe, nodes, keep_off=peers.conflict.excluded, memory=memory)
        except errors.RecipeError as exc:
            return await refuse(exc.reason, str(exc))
        checked = None if self._images is None else await self._images.check(wanted)
        wanted = wanted if checked is None else checked.state  # pinned by digest
        expected = observed_.NO_PREFLIGHT
        if self._images is not None:
            chosen = frozenset(wanted.nodes)
            expected, memory.expected = await preflight.check(
                sr, recipe, selected=[n for n in nodes if n.name in chosen], images=self._images,
                env=self._environment(keep_off=peers.conflict.excluded), facts=self._kinds.snapshot(),
                last=memory.expected,
            )  # fmt: skip
        failures: list[outcomes.Failure] = []
        current = None if owner is None else namespace_.current_labels(self._reader, sr)
        security = pod_security.decide(wanted.objects, sr.spec.pod_security, current=current)
        if security.warning:
            wanted = replace(wanted, warnings=(*wanted.warnings, security.warning))
        if owner is None:
            failures.extend(await namespace_.create(self._writer, sr, labels=security.labels))
        elif security.relabel:
            failures.extend(await namespace_.relabel(self._writer, sr, labels=security.labels))
        failures.extend(await watched.ensure(self._kinds, wanted))

        laps.lap("render")

        # plan
        owned = self._reader.owned(sr.name)
        mine, foreign = inputs.partition(owned, sr.uid)
        await self._report.foreign(sr, foreign)
        pods = memory.pods_seen(
            self._reader, sr, owners=pods_seen.owner_uids(inputs.live_objects(mine).values())
        )
        pods_at = self._reader.cursors()[1]
        seen = inputs.observe(
            sr,
            wanted=wanted,
            nodes=nodes,
            owned=owned,
            pods=pods,
            previous=previous,
            recipe_source=str(recipe.source),
            logs=dict(memory.logs),
            log_reads=dict(memory.log_reads),
            log_rate=self._settings.log_reads_per_second,
            retries=memory.retries,
            drains=memory.drained,
            jobs=memory.jobs,
            lagging=self._reader.lagging(inputs.watched_kinds(wanted.first_of_kind.values(), owned)),
            images={} if checked is None else checked.images,
            rechecked=memory.rechecked,
            preflight=expected,
            walk_memo=memory.walked,
            touched=memory.touched(self._reader),
            node_answers=memory.answers(nodes),
            finished=memory.finished(self._reader, sr, live=pods.pods),
        )
        memory.observed(seen)
        planned = await compute.plan(wanted, seen, now=now)
        memory.planned(planned, now=now, cursors=(nodes_at, pods_at))
        memory.rechecked = self._recheck(
            planned, memory.rechecked, jobs={v.uid for v in mine if v.ref.kind == "Job"}
        )
        if planned.walk is not None:
            self.state_nodes[sr.name] = {s: planned.walk.phase_counts(s) for s in planned.walk.order}

        laps.lap("plan")
        self.computing[sr.name] = laps.computing()

        # execute
        executed = await execute.execute(
            self._writer,
            planned,
            sr=sr,
            nodes=nodes,
            live={v.ref: v for v in mine},
            foreign={v.ref: v for v in foreign},
            sent=memory.sent,
            logs=memory.logs,
            reads=memory.reads,
            lagging=seen.lagging,
            limit=self._settings.write_concurrency,
        )
        memory.executed(executed, wanted=wanted)
        failures.extend(executed.failures)

        # finish
        done = finish.finish(
            planned,
            finish.Outcomes(failures=tuple(failures), absent=executed.absent),
            previous=previous,
            peers=peers,
            transient=memory.transient,
            generation=sr.generation,
            now=now,
        )
        laps.lap("execute")
        memory.transient = done.transient
        requeue = await self._report.conclude(
            sr.name,
            body,
            previous=previous,
            status=node_loss.with_held(done.status, loss.held),
            events_=done.events,
            requeue_after=loss.requeue(done.requeue_after, now=now),
        )
        laps.lap("finish")
        laps.said()
        return requeue

    # -- steps ----------------------------------------------------------------------

    def _recheck(self, planned: actions.Plan, done: frozenset[str], *, jobs: set[str]) -> frozenset[str]:
        """Forget the answers the plan names (a build just made those images), and remember
        for which Jobs, so each is looked up again once (kept only while the Job exists)."""
        if self._images is not None and planned.recheck:
            self._images.forget(image for image, _ in planned.recheck)
        return frozenset(uid for uid in (*done, *(uid for _, uid in planned.recheck)) if uid in jobs)

    async def _render(
        self,
        sr: sr_model.SpecialResource,
        recipe: recipe_.Recipe,
        nodes: Sequence[views.NodeView],
        *,
        keep_off: frozenset[str],
        memory: memory_.Memory,
    ) -> desired.DesiredState:
        async def render() -> desired.DesiredState:
            rendered = await compute.render(
                sr, recipe, nodes, env=self._environment(keep_off=keep_off), facts=self._kinds.snapshot(),
                last=memory.rendered,
            )  # fmt: skip
            memory.rendered = rendered
            return rendered.state

        try:
            return await render()
        except errors.RecipeError:
            # A kind installed since discovery was last read would look unserved: look again once.
            if not await self._kinds_refreshed():
                raise
            return await render()

    def _environment(self, *, keep_off: frozenset[str]) -> pipeline.Environment:
        return pipeline.Environment(
            cluster_version=self._kinds.cluster_version()[0],
            operator=self._settings.operator,
            proxy=self._settings.proxy,
            is_namespaced=self._kinds.is_namespaced,
            is_served=self._kinds.is_served,
            keep_off=keep_off,
            policy=self._settings.policy,
        )

    async def _kinds_refreshed(self) -> bool:
        refresh = getattr(self._kinds, "refresh", None)
        if refresh is None:
            return False
        return bool(await refresh())

    def _teardown_context(
        self, sr: sr_model.SpecialResource, previous: Mapping[str, Any]
    ) -> teardown.Context:
        return teardown.Context(
            sr=sr, previous=previous, reader=self._reader, writer=self._writer, status=self._status
        )

    async def report_unexpected(self, key: str, exc: BaseException) -> None:
        """See ``reporting.Reporter.unexpected``."""
        await self._report.unexpected(key, exc)
