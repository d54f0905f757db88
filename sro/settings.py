"""Runtime settings: frozen values, each default justified where it is declared.

The CLI fills these from flags and environment; tests build them directly. Nothing
here reads the environment by itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class ApiSettings:
    kubeconfig: str | None = None
    """Path to a kubeconfig; None means ``KUBECONFIG``/``~/.kube/config``, or in-cluster in a pod."""
    context: str | None = None
    """The kubeconfig context to use; None means its ``current-context``."""
    connect_timeout: float = 10.0
    """Seconds to establish a connection; the API server is near, a slow connect is a dead one."""
    request_timeout: float = 60.0
    """Seconds of silence allowed while reading a non-streaming answer."""
    retries: int = 5
    """Attempts for a transient failure (connection, 429, 5xx) before it is raised."""
    retry_initial: float = 0.2
    """First retry delay; doubled with jitter up to ``retry_cap``."""
    retry_cap: float = 10.0
    retry_after_cap: float = 60.0
    """Longest Retry-After honoured (429, 503): at least that long is waited before a retry."""
    pool_size: int = 100
    """Connections to the API server: at most this many for requests (``sro.kube.pool``),
    and as many again for watches, each of which holds one for its whole life (behind a
    proxy, one pool of this many serves both)."""
    qps: float = 200.0
    """Requests per second the client sends at most, on average (0: no limit); watches aside
    (``sro.kube.limiter``). A thousand-node convergence averages under 100."""
    burst: int = 400
    """Requests the client may send at once above ``qps`` after a quiet spell."""
    max_in_flight: int = 64
    """Requests (watches aside) awaiting their answer at once, across every reconcile."""


@dataclass(frozen=True, kw_only=True)
class WatchSettings:
    server_timeout_min: int = 300
    """Lower bound of the random server-side ``timeoutSeconds`` (client-go: 5-10 min spreads reconnects)."""
    server_timeout_max: int = 600
    inactivity_timeout: float = 150.0
    """A stream with no event and no bookmark for this long is dead. The API server sends a bookmark
    about every minute; two and a half periods is "well over a minute" without false alarms."""
    page_size: int = 500
    """Items per list page: bounds the memory of one answer on big clusters."""
    backoff_initial: float = 0.8
    backoff_cap: float = 30.0
    backoff_reset: float = 120.0
    """A stream healthy for this long forgets earlier failures (client-go: 2 minutes)."""
    min_watch_duration: float = 1.0
    """A watch ending sooner than this with no event is an error, not a normal close."""
    calm_rest: float = 0.25
    """The Node watch, once calm (``sro.watch.calm``), rests this long between reads and
    takes what came meanwhile in one: the first node change after a calm waits at most
    this long (0: never rest)."""
    calm_after: float = 10.0
    """The Node watch is calm once none of its events has queued work for this long; the
    Node and Pod watches are busy (``busy_rest``) until then."""
    busy_rest: float = 0.05
    """The Node and Pod watches, while their events queue work (a converging fleet), rest
    this long after each read short of a burst (``sro.watch.calm``), and the next read takes
    what came meanwhile: an event read after a quiet moment is read at once, one that
    follows within a rest waits at most this long (0: never rest while busy). At 1,000
    nodes converging, ten pod events a read instead of one or two. A pass then more often
    reads a node from before sro's own last patch of it: it reads the node as that patch
    left it (``sro.plan.observed.Observed.own_view``)."""


@dataclass(frozen=True, kw_only=True)
class QueueSettings:
    backoff_base: float = 0.005
    """Per-key retry delay after the first failure, doubled per failure (client-go: 5 ms)."""
    backoff_cap: float = 300.0
    """Longest per-key retry delay: persistent failures still retry every five minutes."""
    pace: float = 4.0
    """A key kept busy by a flood of news rests ``pace - 1`` times what its last pass spent
    computing (reading caches, rendering, planning: ``sro.runtime.result.Result.cost``)
    before the next (``sro.queue.workqueue``, **Paced**; only after a pass it was added to
    ``busy`` times or more), so that computing takes at most ``1 / pace`` of the time.
    That cost is what a pass pays whatever it finds, and it grows with the nodes: about
    0.2 s at 1,000 nodes (rests of about half a second) and a few hundredths at 100.
    The rest is also what a node whose state completed during a pass waits, beyond that
    pass, for its next write: at the end of a convergence every node left walks its
    remaining states one rest and one pass per state. Measured with ``hack/bench
    converge`` at 1,000 nodes on one day: pace 4 Ready in 1.14 times the floor (232.0 s
    against 202.9 s; 218.9 s in a run without a floor), 107 passes and 33 CPU-seconds;
    pace 20 in 1.22 times (254.2 s against 207.5 s; 265.3 and 265.7 s without a floor),
    35 to 39 passes and 27 to 28 CPU-seconds: its rests of seconds held the last nodes
    76 s after the last driver was ready, for six states. Pace 8 took 247.5 s with 50
    passes. At 100 nodes the control plane bounds the time whatever the pace (pace 1,
    5 and 20: 22.0, 20.9 and 23.1 s). Pace 1 (no rest) once ran 475 passes and 95
    CPU-seconds at 1,000 nodes, when a plan cost more than it does now."""
    rest_cap: float = 5.0
    """Longest rest, whatever a pass took (a pass slowed by API server retries)."""
    rest_ratio: float = 2.0
    """A rest is at most this many times its pass's whole duration. A pass that mostly
    computed and wrote little is one node's step on a large cluster (a kernel change
    brings a few dozen pod events, more than ``busy``), and its next step then waits no
    longer than twice that pass: never longer than resting by the whole pass did."""
    busy: int = 16
    """Only a pass whose key was added at least this many times while it ran rests. One
    node's step (a pod ready, a kernel changed) brings a few adds, and its next pass comes
    at once; a converging fleet brings hundreds a pass."""


@dataclass(frozen=True, kw_only=True)
class ControllerSettings:
    workers: int = 4
    """Concurrent reconciles (of different keys). Reconciles mostly wait on the API server."""
    reconcile_timeout: float = 120.0
    """A reconcile running longer is cancelled and retried with backoff."""
    grace_period: float = 20.0
    """On shutdown, in-flight reconciles get this long to finish (below the pod's 30 s default)."""
    exit_slack: float = 10.0
    """Past the grace period (past the moment, after a lost Lease), ``sro run`` exits 1
    anyway, logging what held the shutdown up (``sro.runtime.exit_watch``)."""
    write_concurrency: int = 16
    """Writes one reconcile keeps in flight within a wave of independent writes (a state's
    per-node pods, its node labels): enough to keep a 2-core API server busy, few enough
    not to queue behind each other."""
    log_reads_per_second: float = 50.0
    """Log tails of waiting pods read again per second, over the whole fleet (0: each pod on
    its own 1-10 s interval alone): every read is proxied by the API server to a kubelet
    (``sro.plan.log_polls``)."""


@dataclass(frozen=True, kw_only=True)
class LeaseSettings:
    enabled: bool = True
    namespace: str = "sro-system"
    name: str = "sro-leader"
    identity: str = ""
    """Empty: hostname plus a random suffix, unique per process."""
    lease_duration: float = 15.0
    """How long a standby waits, after the last observed change, before taking over (client-go)."""
    renew_deadline: float = 10.0
    """The leader gives up if it could not renew for this long: below lease_duration, so it stops
    writing before a standby may start."""
    retry_period: float = 2.0
    """How often to try to acquire or renew."""


@dataclass(frozen=True, kw_only=True)
class ServerSettings:
    """Where /healthz and /readyz (the probe server) and /metrics are served.

    ``sro run`` serves them apart, as controller-runtime does (metrics on 8080, probes on
    8081), so a NetworkPolicy or a ServiceMonitor can reach one without the other. An
    empty address means every interface."""

    address: str = "127.0.0.1"
    port: int | None = 8081
    """Port of the probe server; 0 picks a free one (tests); None serves no probes."""
    metrics_address: str = "127.0.0.1"
    metrics_port: int | None = None
    """Port of a metrics server of its own; 0 picks a free one; None serves /metrics on the
    probe server (one server for everything, what tests use)."""
    metrics: bool = True
    """False serves /metrics nowhere (``--metrics-bind-address 0``)."""


@dataclass(frozen=True, kw_only=True)
class LogSettings:
    format: str = "auto"
    """"json", "console", or "auto": console on a terminal, JSON otherwise (in a pod)."""
    level: str = "info"


@dataclass(frozen=True, kw_only=True)
class OperatorSettings:
    namespace: str = "sro-system"
    """The operator's own namespace: its Lease, its recipe ConfigMaps, the ``operator.namespace`` value."""
    recipe_dirs: tuple[str, ...] = ()
    """Drop-in recipe directories, searched before the built-in recipes."""
    image: str = ""
    """The operator's own image, offered to recipes as ``operator.image``."""
    http_proxy: str = ""
    """Cluster proxy settings injected into containers of objects annotated ``proxy``."""
    https_proxy: str = ""
    no_proxy: str = ""
    recipe_policy: str = ""
    """A file of what recipes may create (``render.policy_file``); empty: the default policy."""
    image_check_registries: tuple[str, ...] = ()
    """Registries whose per-kernel images are checked (and pinned by digest) before use;
    ``*`` for every registry. None by default: the operator may have no road to a
    registry its nodes pull from, and a check that cannot be answered holds a group."""
    image_check_missing_ttl: float = 30.0
    """Seconds a "missing" answer is kept: a group waiting on a push proceeds within this."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    api: ApiSettings = field(default_factory=ApiSettings)
    watch: WatchSettings = field(default_factory=WatchSettings)
    queue: QueueSettings = field(default_factory=QueueSettings)
    controller: ControllerSettings = field(default_factory=ControllerSettings)
    lease: LeaseSettings = field(default_factory=LeaseSettings)
    server: ServerSettings = field(default_factory=ServerSettings)
    log: LogSettings = field(default_factory=LogSettings)
    operator: OperatorSettings = field(default_factory=OperatorSettings)
