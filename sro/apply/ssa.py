"""The one writer: every change sro makes in the cluster, as a typed verb.

The engine never builds a URL or a raw request: each kind of write it makes has a verb
here (``apply``, ``create``, ``delete``, ``apply_status``, ``set_finalizers``,
``patch_node``, ``post_event``) and so do its two reads that bypass the caches (``get``,
``pod_log``). Paths come from discovery, and every request names its resource, so the
``sro_api_requests_total`` metric says what each request touched.

One constant field manager (``sro``) with ``force=true``: sro owns the fields it sets,
an apply is idempotent, and there is no read-modify-write race. Every applied body is
stamped with its desired hash (``sro.apply.diff``) so the next reconcile can tell,
without a request, whether applying again would change anything. Status goes through the
status subresource only. A 409 Conflict on an apply is retried from fresh state (a few
attempts, jittered); other errors are raised as the typed errors of ``sro.errors``.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog

from sro import errors
from sro.apply import diff
from sro.kube import discovery, http
from sro.model import bodies, desired
from sro.watch import decode

log = structlog.get_logger(__name__)

FIELD_MANAGER = "sro"
PROPAGATION = ("Background", "Foreground", "Orphan")

_METADATA = decode.Typed(bodies.ObjectBody)  # a metadata answer, as far as callers read it
CONFLICT_ATTEMPTS = 4
"""Sends of one apply that meets a conflict, 0.1, 0.2 and 0.4 s apart at most (random)."""


def _conflict_pause(attempt: int) -> float:
    """Seconds before resending an apply after its ``attempt``-th send met a conflict."""
    return random.uniform(0.0, min(1.0, 0.05 * 2.0**attempt))


class Writer:
    def __init__(
        self,
        *,
        api: http.Api,
        discovery: discovery.Discovery,
        field_manager: str = FIELD_MANAGER,
        fence: Callable[[], bool] | None = None,
    ) -> None:
        """``fence``: asked immediately before every mutating request (dry runs included);
        False refuses the request with ``errors.NotLeader`` (``kube.lease.LeaderElector.may_write``)."""
        self._api = api
        self._discovery = discovery
        self.field_manager = field_manager
        self._fence = fence
        # (apiVersion, kind) -> the newest resourceVersion a write of this process returned
        self._written: dict[tuple[str, str], int] = {}

    def written_version(self, api_version: str, kind: str) -> int:
        """The newest resourceVersion a write of this process to that kind returned (0: none).

        A cache that has seen at least this version has seen every write sro made to the
        kind (resourceVersions are etcd revisions, one counter for the whole cluster), which
        is what an irreversible step needs before it trusts that cache.
        """
        return self._written.get((api_version, kind), 0)

    def _note(self, api_version: str, kind: str, answer: Mapping[str, Any]) -> None:
        version = bodies.version_of(answer) if isinstance(answer, Mapping) else 0
        if not version:
            return
        key = (api_version, kind)
        self._written[key] = max(self._written.get(key, 0), version)

    def _fenced(self, what: str) -> None:
        if self._fence is not None and not self._fence():
            raise errors.NotLeader(f"{what}: refused, this process does not hold a fresh lease")

    def _guard(self, what: str) -> Callable[[], None]:
        """The fence again before every attempt of a request: a retry, which may wait out a
        long Retry-After, goes out only while this process still leads."""
        return lambda: self._fenced(what)

    async def _path(
        self, ref: desired.ObjectRef, *, subresource: str = "", collection: bool = False
    ) -> tuple[str, str]:
        resource = await self._discovery.resource(ref.api_version, ref.kind)
        if resource.namespaced and not ref.namespace:
            raise errors.Invalid(f"{ref} is namespaced but has no namespace", code=422, reason="Invalid")
        name = "" if collection else ref.name
        return resource.path(namespace=ref.namespace, name=name, subresource=subresource), resource.plural

    async def apply(
        self, body: Mapping[str, Any], *, dry_run: bool = False, subresource: str = "", digest: str = ""
    ) -> dict[str, Any]:
        """Server-side apply ``body``; with ``dry_run`` the server validates and writes nothing.
        ``digest``: the body's ``diff.desired_hash``, when the caller computed it already.

        The answer of a real apply is the object's metadata only (``http.METADATA``, read as
        ``bodies.ObjectBody``): its resourceVersion is what callers read, and a pod sent
        back whole, for each of the thousands a converging fleet applies, costs the API
        server its encoding and sro its decoding. A dry run answers with the whole object,
        which ``sro diff`` compares."""
        ref = desired.ObjectRef.of(body)
        path, plural = await self._path(ref, subresource=subresource)
        sent = diff.stamped(body, digest=digest) if not subresource else dict(body)
        # Strict: a field the schema does not declare is refused (400) instead of dropped.
        params = {"fieldManager": self.field_manager, "force": "true", "fieldValidation": "Strict"}
        if dry_run:
            params["dryRun"] = "All"
        # Retried here, each apply on its own count: a retrying object shared by concurrent
        # applies shares its state, and one apply's refusal came out of another's await.
        for attempt in range(1, CONFLICT_ATTEMPTS + 1):
            self._fenced(f"apply {ref}")
            try:
                answer = await self._api.request(
                    "PATCH",
                    path,
                    params=params,
                    body=json.dumps(sent).encode(),
                    content_type=http.APPLY_PATCH,
                    resource=plural,
                    guard=self._guard(f"apply {ref}"),
                    accept=http.JSON if dry_run else http.METADATA,
                    decode_as=decode.loads if dry_run else _METADATA,
                )
            except errors.Conflict:
                if attempt == CONFLICT_ATTEMPTS:
                    raise
                await asyncio.sleep(_conflict_pause(attempt))
                continue
            log.debug("applied", object=str(ref), dry_run=dry_run, subresource=subresource or None)
            if not dry_run:
                self._note(ref.api_version, ref.kind, answer)
            return answer
        raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover

    async def apply_status(self, ref: desired.ObjectRef, status: Mapping[str, Any]) -> dict[str, Any]:
        """Server-side apply of ``status`` through the status subresource."""
        body = {
            "apiVersion": ref.api_version,
            "kind": ref.kind,
            "metadata": {"name": ref.name, **({"namespace": ref.namespace} if ref.namespace else {})},
            "status": dict(status),
        }
        return await self.apply(body, subresource="status")

    async def create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create ``body``; ``Conflict`` if it exists (what "never adopt" needs, unlike apply)."""
        path, plural = await self._path(desired.ObjectRef.of(body), collection=True)
        ref = desired.ObjectRef.of(body)
        self._fenced(f"create {ref}")
        answer = await self._api.request(
            "POST", path, body=dict(body), resource=plural, guard=self._guard(f"create {ref}")
        )
        self._note(ref.api_version, ref.kind, answer)
        return answer

    async def set_finalizers(
        self, ref: desired.ObjectRef, finalizers: Sequence[str], *, resource_version: str = ""
    ) -> dict[str, Any]:
        """Replace ``ref``'s finalizers with ``finalizers``; with ``resource_version`` a
        concurrent edit of the list ends in ``Conflict``, never in a lost entry."""
        path, plural = await self._path(ref)
        meta: dict[str, Any] = {"finalizers": list(finalizers) or None}
        if resource_version:
            meta["resourceVersion"] = resource_version
        self._fenced(f"finalizers of {ref}")
        answer = await self._api.request(
            "PATCH",
            path,
            body={"metadata": meta},
            content_type=http.MERGE_PATCH,
            resource=plural,
            guard=self._guard(f"finalizers of {ref}"),
        )
        self._note(ref.api_version, ref.kind, answer)
        return answer

    async def patch_node(self, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        """A JSON merge patch of Node ``name`` (a stale ``resourceVersion`` in it: ``Conflict``).

        The answer is the node's metadata only (``http.METADATA``): its labels and
        resourceVersion are all a caller reads, and a node's status, sent back for each of
        the thousands of label patches a converging fleet takes, is most of its size. Of
        that, the fields ``bodies.ObjectMeta`` names are decoded (not its managedFields)."""
        self._fenced(f"patch node {name}")
        answer = await self._api.request(
            "PATCH",
            f"/api/v1/nodes/{name}",
            body=dict(patch),
            content_type=http.MERGE_PATCH,
            resource="nodes",
            guard=self._guard(f"patch node {name}"),
            accept=http.METADATA,
            decode_as=_METADATA,
        )
        self._note("v1", "Node", answer)
        return answer

    async def post_event(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create an events.k8s.io/v1 Event, once.

        With a name (``sro.status.events.name``: the same for the same transition) the
        POST is retried like any request, and AlreadyExists means an earlier attempt
        (whose answer was lost) or an earlier pass posted it: done, and the answer is
        ``{}``. Without a name (``generateName``) it is sent once, since a retry after a
        lost answer would post it twice.
        """
        meta = body.get("metadata") or {}
        namespace = str(meta.get("namespace", ""))
        named = bool(meta.get("name"))
        self._fenced("post event")
        try:
            return await self._api.request(
                "POST",
                f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
                body=dict(body),
                resource="events",
                retry=named,
                guard=self._guard("post event"),
            )
        except errors.Conflict as exc:
            if not named or exc.reason != "AlreadyExists":
                raise
            log.debug("event already posted", name=str(meta.get("name")))
            return {}

    async def get(self, ref: desired.ObjectRef) -> dict[str, Any]:
        """A fresh read from the API server (reconciles read caches; this is for conflicts)."""
        path, plural = await self._path(ref)
        return await self._api.request("GET", path, resource=plural)

    async def delete(self, ref: desired.ObjectRef, *, uid: str = "", propagation: str = "Background") -> bool:
        """Delete ``ref``; False if it was already gone. ``uid`` makes it a precondition."""
        if propagation not in PROPAGATION:
            raise ValueError(f"propagation must be one of {PROPAGATION}")
        path, plural = await self._path(ref)
        options: dict[str, Any] = {
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "propagationPolicy": propagation,
        }
        if uid:
            options["preconditions"] = {"uid": uid}
        self._fenced(f"delete {ref}")
        try:
            answer = await self._api.request(
                "DELETE", path, body=options, resource=plural, guard=self._guard(f"delete {ref}")
            )
        except errors.NotFound:
            return False
        self._note(ref.api_version, ref.kind, answer)  # the object as deletion left it, if any
        log.debug("deleted", object=str(ref), propagation=propagation)
        return True

    async def node_pods(self, node: str, *, label_selector: str = "") -> list[dict[str, Any]]:
        """Every pod bound to ``node``, in any namespace, matching ``label_selector`` when
        given (a fresh list: drains and waits for jobs need every pod, not only those the
        caches keep)."""
        params = {"fieldSelector": f"spec.nodeName={node}"}
        if label_selector:
            params["labelSelector"] = label_selector
        answer = await self._api.request("GET", "/api/v1/pods", params=params, resource="pods")
        return [p for p in answer.get("items") or () if isinstance(p, dict)]

    async def evict(self, namespace: str, name: str) -> bool:
        """Evict a pod through the Eviction API; False if it was already gone.

        ``TooManyRequests`` when a PodDisruptionBudget forbids it now: sent once, never
        retried here (the drain asks again on its next pass, within its timeout)."""
        self._fenced(f"evict pod {namespace}/{name}")
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        try:
            await self._api.request(
                "POST",
                f"/api/v1/namespaces/{namespace}/pods/{name}/eviction",
                body=body,
                resource="pods/eviction",
                retry=False,
                retry_throttled=False,
                guard=self._guard(f"evict pod {namespace}/{name}"),
            )
        except errors.NotFound:
            return False
        return True

    async def pod_log(
        self, *, namespace: str, name: str, container: str, tail_lines: int, limit_bytes: int
    ) -> str:
        """The last ``tail_lines`` lines of a container's log, at most ``limit_bytes`` of them.

        ``limitBytes`` alone counts from the *start* of the log: a driver that prints tens of
        KiB of build output before its ready line would never show it. The API server starts
        at the tail and stops after ``limitBytes``, so the cap only bounds memory.
        """
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/log"
        params = {"container": container, "tailLines": str(tail_lines), "limitBytes": str(limit_bytes)}
        return await self._api.text(path, params=params, resource="pods/log")
