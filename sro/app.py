"""``sro run``: the manager, wired to the SpecialResource engine.

The one place that knows both sides: it registers what the engine needs watched (the
primary kind, the owned kinds recipes commonly use, Nodes with their mapper), adapts the
manager's caches, writer and discovery to the engine's ports (``engine_ports``), and turns
the engine's answer into the controller's ``Result``. Everything else is the manager's:
connection, caches, leader election, workers, health and metrics, signals.

Settings come from ``sro.cli`` (flags with environment fallbacks) as one frozen
``sro.settings.Settings``; nothing here reads the environment.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import structlog

import sro
from sro import errors
from sro import settings as settings_
from sro.cache import projections
from sro.cache import store as store_
from sro.engine import image_checks, recipes, reconciler
from sro.images import cache as image_cache
from sro.images import client as image_client
from sro.model import bodies, selection, views
from sro.model import specialresource as sr_model
from sro.observe import logs
from sro.plan import readiness
from sro.render import policy_file, sources, values
from sro.runtime import exit_watch, handlers, manager, result

log = structlog.get_logger(__name__)

PRIMARY = (sr_model.API_VERSION, sr_model.KIND)
IMAGE_RECIPES = Path("/opt/sro/recipes")
"""Where the container image puts the built-in recipes when the package has no ``assets/``."""

# Kinds the built-in recipes use, watched from the start so a restarted operator sees every
# object it made (other kinds are watched when a recipe first uses them).
OWNED_KINDS = (
    ("v1", "Namespace"),
    ("v1", "Pod"),
    ("v1", "ServiceAccount"),
    ("v1", "ConfigMap"),
    ("v1", "Service"),
    ("apps/v1", "DaemonSet"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ControllerRevision"),  # DaemonSets' template history: what a rollback restores
    ("batch/v1", "Job"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
)
SELECTOR_TTL = 5.0
"""Seconds a recipe's default node selector is reused by the node mapper (node events are
many; reading recipe files for each would be wasteful, and a stale answer only delays)."""
DISCOVERY_MIN_INTERVAL = 10.0
"""Seconds between full rediscoveries asked for by renders that found an unserved kind."""


def recipe_library(recipe_dirs: Sequence[Path]) -> sources.Library:
    """Drop-in directories first, then the built-in recipes (package ``assets/`` or the image's)."""
    builtin = sources.builtin_directory()
    if not builtin.is_dir() and IMAGE_RECIPES.is_dir():
        builtin = IMAGE_RECIPES
    return sources.Library(sources.SearchPath(directories=tuple(recipe_dirs), builtin=builtin))


def engine_settings(
    settings: settings_.Settings,
) -> tuple[reconciler.EngineSettings, tuple[Path, ...]]:
    op = settings.operator
    proxy = values.ProxySettings(http=op.http_proxy, https=op.https_proxy, no_proxy=op.no_proxy)
    operator = values.OperatorInfo(namespace=op.namespace, image=op.image, version=sro.__version__)
    recipe_dirs = tuple(Path(p) for p in op.recipe_dirs)
    policy = policy_file.load(op.recipe_policy)  # a bad policy file stops sro run at once
    engine = reconciler.EngineSettings(
        operator=operator,
        proxy=proxy,
        policy=policy,
        write_concurrency=settings.controller.write_concurrency,
        log_reads_per_second=settings.controller.log_reads_per_second,
    )
    return engine, recipe_dirs


class _Reader:
    """The engine's cached reads, over the manager's stores."""

    def __init__(self, m: manager.Manager) -> None:
        self._m = m

    def special_resource(self, name: str) -> bodies.SpecialResourceBody | None:
        view = self._m.store(*PRIMARY).find(name)
        return cast(bodies.SpecialResourceBody, view.body) if view is not None else None

    def special_resources(self) -> Sequence[bodies.SpecialResourceBody]:
        return [cast(bodies.SpecialResourceBody, v.body) for v in self._m.store(*PRIMARY).values()]

    def nodes(self) -> Sequence[views.NodeView]:
        return self._m.nodes.values()

    def namespace(self, name: str) -> projections.ObjectView | None:
        found: projections.ObjectView | None = self._m.store("v1", "Namespace").find(name)
        return found

    def owned(self, sr_name: str) -> Sequence[projections.ObjectView]:
        return self._m.owned(sr_name)

    def pods(self, namespace: str) -> Sequence[views.PodView]:
        return self._m.pods.values(namespace=namespace)

    def pod(self, namespace: str, name: str) -> views.PodView | None:
        found: views.PodView | None = self._m.pods.find(name, namespace=namespace)
        return found

    def pods_gone(self, since: int | None) -> tuple[int, Sequence[views.PodView]]:
        return self._m.pods.gone_since(since)

    def lagging(self, kinds: Iterable[tuple[str, str]]) -> frozenset[tuple[str, str]]:
        return self._m.lagging(kinds)

    def cursors(self) -> tuple[store_.Cursor, store_.Cursor]:
        return (self._m.nodes.cursor, self._m.pods.cursor)

    def changed_since(
        self, cursors: tuple[store_.Cursor, store_.Cursor]
    ) -> tuple[store_.Since | None, store_.Since | None]:
        return (self._m.nodes.changed_since(cursors[0]), self._m.pods.changed_since(cursors[1]))


class _Kinds:
    """Discovery answers for renders (synchronous, from the manager's snapshot) and watches."""

    def __init__(self, m: manager.Manager) -> None:
        self._m = m

    async def refresh(self) -> bool:
        """Re-read every served group-version; False if the last read is too recent."""
        return await self._m.discovery.read(min_interval=DISCOVERY_MIN_INTERVAL)

    def is_namespaced(self, api_version: str, kind: str) -> bool | None:
        return self._m.is_namespaced(api_version, kind)

    def is_served(self, api_version: str, kind: str) -> bool:
        return self._m.is_served(api_version, kind)

    async def ensure_watched(self, api_version: str, kind: str) -> None:
        await self._m.ensure_watch(api_version, kind)

    def cluster_version(self) -> tuple[str, str, str]:
        return self._m.cluster_version()

    def snapshot(self) -> object:
        return self._m.discovery.facts  # immutable: a newer discovery read is a new object


class _RecipeKeys:
    """Recipe ConfigMap change -> the SpecialResources that use the recipe it holds."""

    def __init__(self, m: manager.Manager) -> None:
        self._m = m

    def __call__(self, old: Any, new: Any) -> set[handlers.QueueKey]:
        names = {v.labels.get(sources.RECIPE_LABEL, "") for v in (old, new) if v is not None}
        keys: set[handlers.QueueKey] = set()
        for view in self._m.store(*PRIMARY).values():
            spec = view.body.get("spec") or {}
            if (spec.get("recipe") or view.name) in names:
                keys.add(handlers.QueueKey(view.name))
        return keys


class _NodeKeys:
    """Node change -> the SpecialResources it concerns (contract: section 6)."""

    def __init__(self, m: manager.Manager, library: recipes.Recipes) -> None:
        self._m = m
        self._library = library
        self._selectors: dict[str, tuple[float, Mapping[str, str]]] = {}
        # name -> (the cached record, its parse): every Node event asks this of every
        # SpecialResource, and a parse costs far more than the rest of the answer.
        self._parsed: dict[str, tuple[object, sr_model.SpecialResource | None]] = {}

    def _recipe_selector(self, recipe: str) -> Mapping[str, str] | None:
        now = time.monotonic()
        cached = self._selectors.get(recipe)
        if cached is not None and now - cached[0] < SELECTOR_TTL:
            return cached[1]
        # Only a version the engine already compiled (off the loop): compiling here would
        # run a recipe's author's work on the event loop. A recipe never compiled is one
        # no reconcile has used yet, and its SpecialResources are queued anyway.
        compiled = self._library.compiled(recipe)
        if compiled is None:
            return None
        selector = compiled.node_selector
        self._selectors[recipe] = (now, selector)
        return selector

    def _specialresources(self) -> list[sr_model.SpecialResource]:
        """The cached SpecialResources, parsed once per version: the cache replaces a
        record when anything in it changes, so the same record is the same parse. One
        that does not parse is left out (its own reconcile says why)."""
        parsed: dict[str, tuple[object, sr_model.SpecialResource | None]] = {}
        for view in self._m.store(*PRIMARY).values():
            known = self._parsed.get(view.name)
            if known is None or known[0] is not view:
                try:
                    known = (view, sr_model.parse(view.body))
                except errors.RecipeError:
                    known = (view, None)
            parsed[view.name] = known
        self._parsed = parsed  # only the ones cached now: a deleted one is forgotten
        return [sr for _, sr in parsed.values() if sr is not None]

    def __call__(self, old: views.NodeView | None, new: views.NodeView | None) -> set[handlers.QueueKey]:
        keys: set[handlers.QueueKey] = set()
        nodes = [n for n in (old, new) if n is not None]
        for sr in self._specialresources():
            prefix = f"{sr.name}.{sr_model.GROUP}/"
            if any(n.labels_of(prefix) for n in nodes):
                keys.add(handlers.QueueKey(sr.name))  # it has marks to keep right or take off
                continue
            default = self._recipe_selector(sr.spec.recipe) if sr.spec.node_selector is None else None
            selector = selection.effective_selector(sr, recipe_default=default)
            if selector is not None and any(selection.matches(n, selector) for n in nodes):
                keys.add(handlers.QueueKey(sr.name))
        return keys


def _publish_status(m: manager.Manager, name: str, engine: reconciler.Engine) -> None:
    """Mirror a SpecialResource's cached status into its gauges (alerts read them), and the
    per-state node counts of its last walk (counted while walking, nothing more per pass).

    Our own status write comes back through the watch and wakes this key again, so the
    gauges follow every status the API server holds.
    """
    view = m.store(*PRIMARY).find(name)
    if view is None:
        m.metrics.specialresource_forgotten(name=name)
    else:
        counts = engine.state_nodes.get(name, {})
        m.metrics.specialresource_status(
            name=name,
            status=view.body.get("status") or {},
            state_nodes={state: {str(p): n for p, n in phases.items()} for state, phases in counts.items()},
        )


def _image_checks(settings: settings_.Settings, m: manager.Manager) -> image_checks.ImageChecks | None:
    """The registry checks of ``--image-check-registries`` (None when it lists none), asked
    through the operator's proxy flags, with the pull secrets read by the manager's client."""
    op = settings.operator
    if not op.image_check_registries:
        return None
    base = image_client.Settings.for_operator(op)
    resolver = dataclasses.replace(base, cache=image_cache.Policy(missing_ttl=op.image_check_missing_ttl))
    return image_checks.ImageChecks(
        image_checks.Settings(registries=op.image_check_registries, resolver=resolver),
        api=lambda: m.api,
        metrics=m.metrics,
    )


def build(settings: settings_.Settings) -> manager.Manager:
    """A manager with the engine registered, ready to ``run``."""
    m = manager.Manager(settings, exit_watch=exit_watch.ExitWatch())
    engine_config, recipe_dirs = engine_settings(settings)
    operator_namespace = engine_config.operator.namespace
    library = recipes.Catalog(
        recipe_library(recipe_dirs),
        configmaps=lambda: m.store("v1", "ConfigMap", namespace=operator_namespace).values(),
        namespace=operator_namespace,
    )
    engine: reconciler.Engine | None = None

    def own_status(view: Any) -> bool:
        return engine is not None and engine.status_is_own(view.name, view.body)

    m.watch_primary(*PRIMARY, own_status=own_status)
    m.watch_mapped(
        "v1",
        "ConfigMap",
        namespace=operator_namespace,
        label_selector=sources.RECIPE_LABEL,
        mapper=_RecipeKeys(m),
    )
    for api_version, kind in OWNED_KINDS:
        m.watch_owned(api_version, kind, status_read=readiness.reads_status(kind))
    m.watch_nodes(_NodeKeys(m, library))
    kinds = _Kinds(m)
    images = _image_checks(settings, m)

    async def reconcile(key: handlers.QueueKey) -> result.Result:
        nonlocal engine
        if engine is None:
            engine = reconciler.Engine(
                reader=_Reader(m),
                writer=m.writer,
                kinds=kinds,
                library=library,
                settings=engine_config,
                enqueue=lambda name: m.queue.add(handlers.QueueKey(name)),
                images=images,
                flaps=lambda loss: m.metrics.node_label_flapped(loss.counts()),
                timed=m.metrics.reconcile_step,
            )
        with logs.bind_reconcile(key, sr=key):
            try:
                seconds = await engine.reconcile(key)
            except (errors.SroError, errors.NotLeader):
                raise  # API answers, recipe errors and losing the lease have their own handling
            except Exception as exc:
                await engine.report_unexpected(key, exc)
                raise
        _publish_status(m, key, engine)
        cost = engine.computing.pop(key, None)  # the pace rests by it (None: by the whole pass)
        return result.Result(requeue_after=seconds, cost=cost)

    m.reconcile_with(reconcile)
    log.info(
        "engine registered", recipe_dirs=[str(d) for d in recipe_dirs], recipe_configmaps=operator_namespace
    )
    return m


async def run(settings: settings_.Settings) -> int:
    """Run the operator until SIGTERM/SIGINT (0) or a lost lease (1)."""
    logs.configure(format=settings.log.format, level=settings.log.level)
    loop = type(asyncio.get_running_loop())
    log.info("starting", version=sro.__version__, event_loop=loop.__module__.partition(".")[0])
    return await build(settings).run()
