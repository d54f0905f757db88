"""The API server's audit log of writes, and a reader that answers "which writes, by whom, when".

Every cluster ``hack/cluster`` starts records each mutating request (create, update,
patch, delete, deletecollection) at Metadata level, one JSON event per line, in
``<run>/logs/audit.log`` (``RunDir.audit_log``). Reads are not recorded, and neither
are the node Lease renewals in ``kube-node-lease`` (the simulated kubelets' heartbeat,
tens a second at 1,000 nodes, which says nothing about any controller): the log stays
cheap at scale and holds exactly what a test about writes asks for. The log is never
rotated (``--audit-log-maxsize=0``), so one file holds a cluster's whole history, across
apiserver restarts too (the server appends).

The reader keeps one ``Write`` per ``ResponseComplete`` event (a request's final word:
its status code), tolerates a last line the server is still writing, and has small
helpers to filter and count. Who wrote is ``user`` (the authenticated name: a client
certificate's CN, ``system:serviceaccount:<ns>:<name>`` for a token) and ``user_agent``
(sro sends ``sro/<version>``; kubectl ``kubectl/<version> …``), so a test tells the
operator's writes from its own even when both use the admin kubeconfig.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import Any, TypeVar

MUTATING_VERBS = ("create", "update", "patch", "delete", "deletecollection")

# What the sro operator sends as its User-Agent (sro.kube.http), before the version.
SRO_AGENT_PREFIX = "sro/"

POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    # One event per request: the final one, with the status code.
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [
        # The simulated kubelets' node heartbeats: many, and never what a test asks about.
        {"level": "None", "resources": [{"group": "coordination.k8s.io", "resources": ["leases"]}],
         "namespaces": ["kube-node-lease"]},
        {"level": "Metadata", "verbs": list(MUTATING_VERBS)},
        {"level": "None"},
    ],
}  # fmt: skip


def apiserver_flags(*, policy: Path, log: Path) -> list[str]:
    """kube-apiserver's audit flags: the policy above, JSON lines, one unrotated file."""
    return [
        f"--audit-policy-file={policy}",
        f"--audit-log-path={log}",
        "--audit-log-format=json",
        "--audit-log-maxsize=0",  # 0: plain append, never rotated
        "--audit-log-mode=blocking",  # written before the answer completes: no batching delay
    ]


def write_policy(path: Path) -> Path:
    """Writes the policy file (JSON is YAML); returns its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(POLICY, indent=2) + "\n")
    return path


@dataclasses.dataclass(frozen=True)
class Write:
    """One mutating request as the API server saw it end."""

    time: datetime.datetime  # when the answer was complete (stageTimestamp), aware, UTC
    user: str
    user_agent: str
    verb: str
    resource: str  # plural, e.g. "configmaps"; the group is not part of it
    subresource: str  # "status", "binding", … or ""
    namespace: str
    name: str
    code: int  # the HTTP status of the answer
    audit_id: str
    api_group: str = ""  # "" for the core group
    dry_run: bool = False  # validated and answered, nothing stored (``?dryRun=All``)

    @property
    def succeeded(self) -> bool:
        return 200 <= self.code < 300

    @property
    def by_sro(self) -> bool:
        return self.user_agent.startswith(SRO_AGENT_PREFIX)


def _time(value: Any) -> datetime.datetime:
    # The server writes RFC 3339 with microseconds and a "Z".
    return datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def parse_event(event: dict[str, Any]) -> Write | None:
    """The ``Write`` of one audit event, or None if it is not a completed mutating request."""
    if event.get("stage") != "ResponseComplete" or event.get("verb") not in MUTATING_VERBS:
        return None
    ref = event.get("objectRef") or {}
    user = event.get("user") or {}
    return Write(
        time=_time(event.get("stageTimestamp") or event.get("requestReceivedTimestamp")),
        user=str(user.get("username", "")),
        user_agent=str(event.get("userAgent", "")),
        verb=str(event["verb"]),
        resource=str(ref.get("resource", "")),
        subresource=str(ref.get("subresource", "")),
        namespace=str(ref.get("namespace", "")),
        name=str(ref.get("name", "")),
        code=int((event.get("responseStatus") or {}).get("code", 0) or 0),
        audit_id=str(event.get("auditID", "")),
        api_group=str(ref.get("apiGroup", "")),
        dry_run="dryRun=" in str(event.get("requestURI", "")),
    )


def read(path: Path) -> list[Write]:
    """Every completed write in the log, in the order written.

    A missing file is an empty log; a line that does not parse (the one the server is
    writing while we read) is skipped.
    """
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return []
    writes: list[Write] = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and (write := parse_event(event)) is not None:
            writes.append(write)
    return writes


def by_user(writes: Iterable[Write], user: str) -> list[Write]:
    return [w for w in writes if w.user == user]


def by_agent(writes: Iterable[Write], prefix: str) -> list[Write]:
    """The writes whose User-Agent starts with ``prefix`` (``SRO_AGENT_PREFIX`` for sro's)."""
    return [w for w in writes if w.user_agent.startswith(prefix)]


def since(writes: Iterable[Write], t: datetime.datetime) -> list[Write]:
    """The writes completed at or after ``t`` (a naive ``t`` is taken as UTC)."""
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.UTC)
    return [w for w in writes if w.time >= t]


def matching(
    writes: Iterable[Write],
    *,
    verb: str | None = None,
    resource: str | None = None,
    subresource: str | None = None,
    namespace: str | None = None,
    name: str | None = None,
) -> list[Write]:
    """The writes matching every field given."""
    wanted = {
        k: v
        for k, v in (
            ("verb", verb),
            ("resource", resource),
            ("subresource", subresource),
            ("namespace", namespace),
            ("name", name),
        )
        if v is not None
    }
    return [w for w in writes if all(getattr(w, k) == v for k, v in wanted.items())]


K = TypeVar("K", bound=Hashable)


def count_by(writes: Iterable[Write], *, key: Callable[[Write], K]) -> Counter[K]:
    """How many writes per ``key(write)``, e.g. ``key=lambda w: (w.verb, w.resource)``."""
    return Counter(key(w) for w in writes)


def tally(writes: Iterable[Write]) -> dict[str, int]:
    """How many writes per ``"<verb> <resource>[/<subresource>]"``, most first: the figures'
    split of writes (a node's labels and its status are different writers' work)."""
    counts = count_by(
        writes, key=lambda w: f"{w.verb} {w.resource}" + (f"/{w.subresource}" if w.subresource else "")
    )
    return dict(counts.most_common())
