"""Prometheus metrics of the runtime, in a registry of their own.

A dedicated ``CollectorRegistry`` (not the process-global one) lets several managers
live in one test process and lets tests read exact values. ``Metrics`` implements the
small metrics protocols of the queue, the API client, the reflector and the
controller, so none of those imports prometheus. Label values from a finite set are
created at zero up front, so a rate over them exists before the first event.

Beside sro's own ``sro_*`` series the registry holds the process and Python collectors
(``process_*``, ``python_info``, ``python_gc_*``), ``sro_build_info``, and the series
client-go and controller-runtime export under their own names (``sro.observe.standard``),
fed by the same calls.
"""

from __future__ import annotations

import platform
from collections.abc import Hashable, Mapping
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

import sro
from sro.observe import children, sr_series, standard

RESULTS = ("success", "requeue_after", "error", "terminal", "timeout")
WATCH_RESTART_REASONS = ("closed", "closed_early", "error", "inactive", "expired")
RELIST_REASONS = ("initial", "expired", "expired_again")
REGISTRY_OUTCOMES = ("exists", "missing", "unauthorized", "unreachable", "invalid")  # sro.images.answers
FLAP_OUTCOMES = ("seen", "absorbed", "released")  # sro.plan.node_loss.Decision
REGISTRY_CACHE = ("hit", "miss", "joined")  # answered from the cache, asked, or joined a request in flight


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        self.standard = standard.StandardSeries(r)
        build = Gauge(
            "sro_build_info",
            "1, labelled with sro's and Python's versions",
            ["version", "python"],
            registry=r,
        )
        build.labels(version=sro.__version__, python=platform.python_version()).set(1)
        self.reconcile_total = Counter("sro_reconcile", "Reconciles by result", ["result"], registry=r)
        self.reconcile_duration = Histogram(
            "sro_reconcile_duration_seconds",
            "Time per reconcile",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
            registry=r,
        )
        self.reconcile_steps = Histogram(
            "sro_reconcile_step_seconds",
            "Time per step of a reconcile (read, render, plan, execute, finish)",
            ["step"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
            registry=r,
        )
        self.workqueue_depth = Gauge("sro_workqueue_depth", "Keys waiting in the work queue", registry=r)
        self.workqueue_adds = Counter("sro_workqueue_adds", "Adds to the work queue", registry=r)
        self.workqueue_retries = Counter("sro_workqueue_retries", "Rate-limited re-adds", registry=r)
        self.workqueue_latency = Histogram(
            "sro_workqueue_latency_seconds",
            "Time a key waited in the queue before a worker took it",
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60),
            registry=r,
        )
        self.event_loop_lag = Histogram(
            "sro_event_loop_lag_seconds",
            "How much later than asked a probe of the event loop woke (sro.observe.looplag)",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=r,
        )
        self.gc_pause = Histogram(
            "sro_gc_pause_seconds",
            "How long each collection of the cyclic garbage collector held the process (sro.observe.gcpause)",
            ["generation"],
            buckets=(0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=r,
        )
        self.watch_restarts = Counter(
            "sro_watch_restarts", "Watch streams restarted", ["resource", "reason"], registry=r
        )
        self.watch_relists = Counter(
            "sro_watch_relists", "Lists made by reflectors", ["resource", "reason"], registry=r
        )
        self.watch_events = Counter("sro_watch_events", "Watch events received", ["resource"], registry=r)
        self._watch_events = children.Children(self.watch_events)
        self.watch_wakes = Counter(
            "sro_watch_wakes",
            "Work-queue adds made by watch events, per stream: what keeps passes running",
            ["resource"],
            registry=r,
        )
        self._watch_wakes = children.Children(self.watch_wakes)
        self.watch_reads = Counter(
            "sro_watch_reads",
            "Reads of a watch connection, per stream: events per read is what each wake-up carried",
            ["resource"],
            registry=r,
        )
        self._watch_reads = children.Children(self.watch_reads)
        self.watch_rests = Counter(
            "sro_watch_rests",
            "Rests between two reads of a calm stream (sro.watch.calm): the first change after "
            "a calm waited up to one",
            ["resource"],
            registry=r,
        )
        self.watch_handler_errors = Counter(
            "sro_watch_handler_errors",
            "Changes whose event handler raised (the change is not queued; the next one is)",
            ["resource"],
            registry=r,
        )
        self.watch_lines_skipped = Counter(
            "sro_watch_lines_skipped",
            "Watch lines longer than the client keeps (the object stays as last listed)",
            ["resource"],
            registry=r,
        )
        self.api_requests = Counter(
            "sro_api_requests", "Requests to the API server", ["verb", "resource", "code"], registry=r
        )
        self._api_requests = children.Children(self.api_requests)
        self.api_throttled_total = Counter(
            "sro_api_throttled",
            "Retries the API server asked to delay (429, or 503 with Retry-After), requests and watches",
            ["resource", "code"],
            registry=r,
        )
        self.api_throttled_seconds = Counter(
            "sro_api_throttled_seconds", "Seconds waited before those retries", ["resource"], registry=r
        )
        self.cache_objects = Gauge("sro_cache_objects", "Objects held per cache", ["resource"], registry=r)
        self._cache_objects = children.Children(self.cache_objects)
        self.leader = Gauge("sro_leader", "1 while this process holds the lease", registry=r)
        self.active_workers = Gauge("sro_active_workers", "Reconciles running now", registry=r)
        self.registry_requests = Counter(
            "sro_registry_requests", "Requests to image registries", ["kind", "code"], registry=r
        )
        self.registry_lookups = Counter(
            "sro_registry_lookups",
            "Image checks, by answer and by whether the cache answered",
            ["outcome", "cache"],
            registry=r,
        )
        self.node_label_flaps = Counter(
            "sro_node_label_flaps",
            "Selected nodes that lost their selection or kernel labels (seen), got them back "
            "within spec.nodeLossGracePeriodSeconds (absorbed), or were let go when it ended (released)",
            ["outcome"],
            registry=r,
        )
        self.specialresources = sr_series.SpecialResourceSeries(r)
        for result in RESULTS:
            self.reconcile_total.labels(result=result)
        for flap in FLAP_OUTCOMES:
            self.node_label_flaps.labels(outcome=flap)
        for outcome in REGISTRY_OUTCOMES:
            for cached in REGISTRY_CACHE:
                self.registry_lookups.labels(outcome=outcome, cache=cached)

    # -- created at zero per resource as soon as a reflector starts -------------

    def watch_started(self, resource: str) -> None:
        for reason in WATCH_RESTART_REASONS:
            self.watch_restarts.labels(resource=resource, reason=reason)
        for reason in RELIST_REASONS:
            self.watch_relists.labels(resource=resource, reason=reason)
        self.watch_events.labels(resource=resource)
        self.watch_wakes.labels(resource=resource)
        self.watch_rests.labels(resource=resource)
        self.watch_reads.labels(resource=resource)
        self.cache_objects.labels(resource=resource).set(0)

    # -- sro.queue.workqueue.QueueMetrics ---------------------------------------

    def queue_added(self) -> None:
        self.workqueue_adds.inc()
        self.standard.added()

    def queue_depth(self, depth: int) -> None:
        self.workqueue_depth.set(depth)
        self.standard.depth.labels(name=standard.CONTROLLER).set(depth)

    def queue_latency(self, seconds: float) -> None:
        self.workqueue_latency.observe(seconds)
        self.standard.queue_duration.labels(name=standard.CONTROLLER).observe(seconds)

    def queue_retried(self) -> None:
        self.workqueue_retries.inc()
        self.standard.retries.labels(name=standard.CONTROLLER).inc()

    def queue_work_started(self, key: Hashable) -> None:
        self.standard.work_started(key)

    def queue_work_done(self, key: Hashable, seconds: float) -> None:
        self.standard.work_done(key, seconds)

    # -- sro.kube.counting.ApiMetrics ------------------------------------------

    def api_request(
        self,
        *,
        verb: str,
        resource: str,
        code: str,
        method: str = "",
        host: str = "",
        seconds: float | None = None,
    ) -> None:
        """One request (``seconds`` until the answer's headers, None when none came)."""
        self._api_requests(verb, resource, code).inc()
        self.standard.request(
            method=method or verb.upper(),
            code=code if code.isdigit() else "<error>",
            host=host,
            seconds=seconds,
        )

    def api_limited(self, *, verb: str, host: str, seconds: float) -> None:
        """A request waited ``seconds`` for the client's own rate limit (``sro.kube.limiter``)."""
        self.standard.limited(verb=verb, host=host, seconds=seconds)

    def api_throttled(self, *, resource: str, code: str, seconds: float) -> None:
        self.api_throttled_total.labels(resource=resource, code=code).inc()
        self.api_throttled_seconds.labels(resource=resource).inc(seconds)

    def watch_line_skipped(self, *, resource: str) -> None:
        self.watch_lines_skipped.labels(resource=resource).inc()

    # -- sro.watch.reflector.WatchMetrics ------------------------------------------

    def watch_restarted(self, *, resource: str, reason: str) -> None:
        self.watch_restarts.labels(resource=resource, reason=reason).inc()

    def watch_relisted(self, *, resource: str, reason: str) -> None:
        self.watch_relists.labels(resource=resource, reason=reason).inc()

    def watch_handler_failed(self, *, resource: str) -> None:
        self.watch_handler_errors.labels(resource=resource).inc()

    def watch_event(self, *, resource: str) -> None:
        self._watch_events(resource).inc()

    def watch_woke(self, *, resource: str) -> None:
        self._watch_wakes(resource).inc()

    def watch_read(self, *, resource: str) -> None:
        self._watch_reads(resource).inc()

    def watch_rested(self, *, resource: str) -> None:
        self.watch_rests.labels(resource=resource).inc()

    def cache_size(self, *, resource: str, size: int) -> None:
        self._cache_objects(resource).set(size)

    # -- sro.runtime.controller.ControllerMetrics ---------------------------------

    def reconciled(self, *, result: str, seconds: float) -> None:
        self.reconcile_total.labels(result=result).inc()
        self.reconcile_duration.observe(seconds)
        self.standard.reconciled(result=result, seconds=seconds)

    def reconcile_step(self, step: str, seconds: float) -> None:
        self.reconcile_steps.labels(step=step).observe(seconds)

    def workers_active(self, delta: int) -> None:
        self.active_workers.inc(delta)
        self.standard.active_workers.labels(controller=standard.CONTROLLER).inc(delta)

    # -- sro.observe.looplag.LagMetrics ------------------------------------------------

    def loop_lag(self, seconds: float) -> None:
        self.event_loop_lag.observe(seconds)

    def gc_paused(self, *, generation: int, seconds: float) -> None:
        self.gc_pause.labels(generation=str(generation)).observe(seconds)

    # -- leader election -------------------------------------------------------------

    def leading(self, *, lease: str, leading: bool) -> None:
        self.leader.set(1 if leading else 0)
        self.standard.leader.labels(name=lease).set(1 if leading else 0)

    # -- sro.images.client.RegistryMetrics -----------------------------------------

    def registry_request(self, *, kind: str, code: str) -> None:
        self.registry_requests.labels(kind=kind, code=code).inc()

    def registry_lookup(self, *, outcome: str, cache: str) -> None:
        self.registry_lookups.labels(outcome=outcome, cache=cache).inc()

    def node_label_flapped(self, counts: Mapping[str, int]) -> None:
        """Count one pass's label flaps, by outcome (``FLAP_OUTCOMES``)."""
        for outcome, count in counts.items():
            if count:
                self.node_label_flaps.labels(outcome=outcome).inc(count)

    # -- SpecialResource status, published after each status write ----------------

    def specialresource_status(
        self,
        *,
        name: str,
        status: Mapping[str, Any],
        state_nodes: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        """Publish a SpecialResource's series from its status (``sr_series``)."""
        self.specialresources.publish(name=name, status=status, state_nodes=state_nodes)

    def specialresource_forgotten(self, *, name: str) -> None:
        """Drop every series of a SpecialResource that no longer exists."""
        self.specialresources.forget(name=name)

    # -- reading ----------------------------------------------------------------

    def value(self, name: str, labels: dict[str, str] | None = None) -> float:
        """One sample's value (0 if absent), e.g. ``value("sro_reconcile_total", {"result": "error"})``."""
        found = self.registry.get_sample_value(name, labels or {})
        return float(found) if found is not None else 0.0

    def total(self, name: str, **match: str) -> float:
        """The sum of a metric's samples whose labels include ``match``."""
        total = 0.0
        for family in self.registry.collect():
            for sample in family.samples:
                if sample.name == name and all(sample.labels.get(k) == v for k, v in match.items()):
                    total += sample.value
        return total

    def exposition(self) -> bytes:
        return bytes(generate_latest(self.registry))
