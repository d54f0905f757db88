"""Writes: server-side apply, status, deletes and dry runs, for any kind via discovery.

One constant field manager (``sro``) with ``force=true``: sro owns the fields it sets,
an apply is idempotent, and there is no read-modify-write race. Every applied body is
stamped with its desired hash (``sro.apply.diff``) so the next reconcile can tell,
without a request, whether applying again would change anything; ``apply_if_needed``
does that comparison against the cached live object. Status goes through the status
subresource only. A 409 Conflict is retried from fresh state (a few attempts, jittered);
other errors are raised as the typed errors of ``sro.errors``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import structlog
import tenacity

from sro import errors
from sro.apply import diff
from sro.kube import discovery, http
from sro.model import desired

log = structlog.get_logger(__name__)

FIELD_MANAGER = "sro"
PROPAGATION = ("Background", "Foreground", "Orphan")

_on_conflict = tenacity.AsyncRetrying(
    stop=tenacity.stop_after_attempt(4),
    wait=tenacity.wait_random_exponential(multiplier=0.05, max=1.0),
    retry=tenacity.retry_if_exception_type(errors.Conflict),
    reraise=True,
)


class Writer:
    def __init__(
        self, *, api: http.Api, discovery: discovery.Discovery, field_manager: str = FIELD_MANAGER
    ) -> None:
        self._api = api
        self._discovery = discovery
        self.field_manager = field_manager

    async def _path(
        self, ref: desired.ObjectRef, *, subresource: str = "", collection: bool = False
    ) -> tuple[str, str]:
        resource = await self._discovery.resource(ref.api_version, ref.kind)
        if resource.namespaced and not ref.namespace:
            raise errors.Invalid(f"{ref} is namespaced but has no namespace", code=422, reason="Invalid")
        name = "" if collection else ref.name
        return resource.path(namespace=ref.namespace, name=name, subresource=subresource), resource.plural

    async def apply(
        self, body: Mapping[str, Any], *, dry_run: bool = False, subresource: str = ""
    ) -> dict[str, Any]:
        """Server-side apply ``body``; with ``dry_run`` the server validates and writes nothing."""
        ref = desired.ObjectRef.of(body)
        path, plural = await self._path(ref, subresource=subresource)
        sent = diff.stamped(body) if not subresource else dict(body)
        params = {"fieldManager": self.field_manager, "force": "true"}
        if dry_run:
            params["dryRun"] = "All"
        async for attempt in _on_conflict:
            with attempt:
                answer = await self._api.request(
                    "PATCH",
                    path,
                    params=params,
                    body=json.dumps(sent).encode(),
                    content_type=http.APPLY_PATCH,
                    resource=plural,
                )
                log.debug("applied", object=str(ref), dry_run=dry_run, subresource=subresource or None)
                return answer
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    async def apply_if_needed(
        self, body: Mapping[str, Any], live: Mapping[str, Any] | None
    ) -> dict[str, Any] | None:
        """Apply only if it would change something (absent, changed, or drifted); None if skipped."""
        if not diff.needs_apply(body, live):
            return None
        return await self.apply(body)

    async def validate(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A server-side dry run: raises ``Invalid`` (with field causes) if the server would refuse."""
        return await self.apply(body, dry_run=True)

    async def apply_status(self, ref: desired.ObjectRef, status: Mapping[str, Any]) -> dict[str, Any]:
        """Server-side apply of ``status`` through the status subresource."""
        body = {
            "apiVersion": ref.api_version,
            "kind": ref.kind,
            "metadata": {"name": ref.name, **({"namespace": ref.namespace} if ref.namespace else {})},
            "status": dict(status),
        }
        return await self.apply(body, subresource="status")

    async def patch_status(self, ref: desired.ObjectRef, status: Mapping[str, Any]) -> dict[str, Any]:
        """A JSON merge patch of ``status`` through the status subresource."""
        path, plural = await self._path(ref, subresource="status")
        return await self._api.request(
            "PATCH", path, body={"status": dict(status)}, content_type=http.MERGE_PATCH, resource=plural
        )

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
        try:
            await self._api.request("DELETE", path, body=options, resource=plural)
        except errors.NotFound:
            return False
        log.debug("deleted", object=str(ref), propagation=propagation)
        return True

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        """A raw JSON request for what has no helper (Events, node patches, finalizers)."""
        return await self._api.request(method, path, body=body, content_type=content_type, params=params)

    async def pod_log(self, *, namespace: str, name: str, container: str, limit_bytes: int) -> str:
        """The last part of a container's log (up to ``limit_bytes``)."""
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/log"
        params = {"container": container, "limitBytes": str(limit_bytes)}
        return await self._api.text("GET", path, params=params, resource="pods/log")
