"""The series client-go and controller-runtime export, under their names and labels.

Dashboards and alerts written for Kubernetes controllers (the controller-runtime Grafana
dashboards, the kube-prometheus rules, most operators' own) query ``workqueue_*``,
``rest_client_*``, ``controller_runtime_reconcile_*`` and ``leader_election_master_status``.
sro's own ``sro_*`` series stay beside them (its docs, alerts and dashboard read those);
``sro.observe.metrics.Metrics`` feeds both from the same calls, so the two never disagree.

Names, labels and buckets follow client-go's ``workqueue`` and ``rest`` metrics (as
registered by controller-runtime's ``pkg/metrics``) and controller-runtime's
``internal/controller/metrics``: the queue's ``name`` label and the reconcile's
``controller`` label are the controller's name; ``rest_client_requests_total`` counts by
HTTP ``code``, ``method`` and ``host``. In-flight work (``workqueue_unfinished_work_seconds``,
``workqueue_longest_running_processor_seconds``) is computed when scraped.
"""

from __future__ import annotations

import time
from collections.abc import Hashable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from sro.observe import children

CONTROLLER = "specialresource"
"""The controller's name: the ``name`` of its queue and the ``controller`` of its reconciles."""

QUEUE_BUCKETS = tuple(10.0**e for e in range(-8, 2))
"""client-go's workqueue buckets: 10 ns to 10 s, one per power of ten."""
REST_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
"""client-go's request latency buckets."""
RECONCILE_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9),
    *(1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60),
)
"""controller-runtime's reconcile time buckets."""

RECONCILE_RESULTS = ("success", "error", "requeue", "requeue_after")
"""controller-runtime's ``result`` label values, each created at zero."""
_RESULT = {"success": "success", "requeue_after": "requeue_after", "error": "error", "terminal": "error"}
_ERRORS = frozenset({"error", "terminal", "timeout"})


class StandardSeries:
    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        q = ["name"]
        self.depth = Gauge("workqueue_depth", "Current depth of workqueue", q, registry=r)
        self.adds = Counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", q, registry=r
        )
        self.queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            q,
            buckets=QUEUE_BUCKETS,
            registry=r,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            q,
            buckets=QUEUE_BUCKETS,
            registry=r,
        )
        self.retries = Counter(
            "workqueue_retries_total", "Total number of retries handled by workqueue", q, registry=r
        )
        unfinished = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads",
            q,
            registry=r,
        )
        longest = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            q,
            registry=r,
        )
        self._processing: dict[Hashable, float] = {}  # key -> monotonic start
        unfinished.labels(name=CONTROLLER).set_function(self._unfinished)
        longest.labels(name=CONTROLLER).set_function(self._longest)
        self.rest_requests = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host",
            ["code", "method", "host"],
            registry=r,
        )
        self.rest_duration = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host",
            ["verb", "host"],
            buckets=REST_BUCKETS,
            registry=r,
        )
        self.rest_limited = Histogram(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host",
            ["verb", "host"],
            buckets=REST_BUCKETS,
            registry=r,
        )
        c = ["controller"]
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            c,
            registry=r,
        )
        self.terminal_errors = Counter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            c,
            registry=r,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            c,
            buckets=RECONCILE_BUCKETS,
            registry=r,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            c,
            registry=r,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
            "1 indicates master. 'name' is the string used to identify the lease",
            ["name"],
            registry=r,
        )
        for result in RECONCILE_RESULTS:
            self.reconcile_total.labels(controller=CONTROLLER, result=result)
        self.reconcile_errors.labels(controller=CONTROLLER)
        self.terminal_errors.labels(controller=CONTROLLER)
        self.active_workers.labels(controller=CONTROLLER).set(0)
        self.depth.labels(name=CONTROLLER).set(0)
        self._added = self.adds.labels(name=CONTROLLER)
        self.retries.labels(name=CONTROLLER)
        # asked for on every request (children.Children)
        self._rest_requests = children.Children(self.rest_requests)
        self._rest_duration = children.Children(self.rest_duration)
        self._rest_limited = children.Children(self.rest_limited)

    # -- the queue ----------------------------------------------------------------

    def work_started(self, key: Hashable) -> None:
        self._processing[key] = time.monotonic()

    def work_done(self, key: Hashable, seconds: float) -> None:
        self._processing.pop(key, None)
        self.work_duration.labels(name=CONTROLLER).observe(seconds)

    def _unfinished(self) -> float:
        now = time.monotonic()
        return sum(now - started for started in self._processing.values())

    def _longest(self) -> float:
        now = time.monotonic()
        return max((now - started for started in self._processing.values()), default=0.0)

    # -- requests and reconciles -----------------------------------------------------

    def added(self) -> None:
        self._added.inc()

    def request(self, *, method: str, code: str, host: str, seconds: float | None) -> None:
        self._rest_requests(code, method, host).inc()
        if seconds is not None:
            self._rest_duration(method, host).observe(seconds)

    def limited(self, *, verb: str, host: str, seconds: float) -> None:
        self._rest_limited(verb, host).observe(seconds)

    def reconciled(self, *, result: str, seconds: float) -> None:
        self.reconcile_total.labels(controller=CONTROLLER, result=_RESULT.get(result, "error")).inc()
        if result in _ERRORS:
            self.reconcile_errors.labels(controller=CONTROLLER).inc()
        if result == "terminal":
            self.terminal_errors.labels(controller=CONTROLLER).inc()
        self.reconcile_time.labels(controller=CONTROLLER).observe(seconds)
