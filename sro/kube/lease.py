"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's rules.

* Acquire if the Lease is absent, has no holder (released), or has not changed for
  its ``leaseDurationSeconds`` as observed by the *local* clock since the last change
  we saw (``resourceVersion``). The timestamps in the record are never trusted:
  clocks differ between machines.
* Every write carries the ``resourceVersion`` it was based on, so of two candidates
  racing for an expired Lease one gets 409 Conflict and stays standby.
* The leader renews every ``retry_period``. If it cannot renew for ``renew_deadline``
  (shorter than the lease duration), ``hold`` raises ``LeaderLost`` before any standby
  may take over, and the manager stops all writes at once. Seeing another holder ends
  leadership immediately.
* ``release`` (clean shutdown) clears the holder and sets the duration to 1 s, so a
  standby takes over at its next retry instead of waiting out the lease.

Fencing: ``may_write()`` is true only while this process leads *and* renewed within the
renew deadline by its own clock; the writer asks it immediately before every mutating
request (``sro.apply.ssa.Writer``). A process whose event loop stalled past the deadline
(a long pause, CPU starvation) therefore sends nothing when it resumes, even before
``hold`` notices: by then a standby may hold the Lease. Reconciles stay idempotent
(server-side apply) for what the fence cannot see, such as a request already on the wire.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import socket
import uuid
from collections.abc import Callable
from typing import Any

import structlog

from sro import errors
from sro import settings as settings_
from sro.kube import http
from sro.queue import clock as clocks

log = structlog.get_logger(__name__)


class LeaderLost(errors.SroError):
    """This process is no longer the leader: stop writing now."""


def default_identity() -> str:
    return f"{socket.gethostname()}_{os.getpid()}_{uuid.uuid4().hex[:8]}"


def _now_micro() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        *,
        api: http.Api,
        settings: settings_.LeaseSettings,
        clock: clocks.Clock | None = None,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        self.settings = settings
        self.identity = settings.identity or default_identity()
        self._api = api
        self._clock = clock or clocks.MonotonicClock()
        self._on_change = on_change or (lambda _leading: None)
        self._path = f"/apis/coordination.k8s.io/v1/namespaces/{settings.namespace}/leases"
        self._observed_rv = ""
        self._observed_at = 0.0
        self._observed_holder = ""
        self.is_leader = False
        self.last_renewal = 0.0  # clock time of the last successful renewal
        self._log = log.bind(lease=f"{settings.namespace}/{settings.name}", identity=self.identity)

    @property
    def observed_holder(self) -> str:
        return self._observed_holder

    def may_write(self) -> bool:
        """Whether this process leads and renewed within the renew deadline (the fence)."""
        return self.is_leader and self._clock.now() - self.last_renewal < self.settings.renew_deadline

    async def acquire(self) -> None:
        """Return once this process holds the Lease (standby until then)."""
        while True:
            if await self._attempt():
                self.last_renewal = self._clock.now()
                self._set_leader(True)
                self._log.info("acquired the lease")
                return
            await asyncio.sleep(self.settings.retry_period)

    async def hold(self) -> None:
        """Renew until leadership is lost; then raise ``LeaderLost``. Never returns."""
        self.last_renewal = self._clock.now()
        while True:
            await asyncio.sleep(self.settings.retry_period)
            remaining = self.settings.renew_deadline - (self._clock.now() - self.last_renewal)
            renewed = False
            if remaining > 0:
                renewed = await self._attempt(budget=remaining)
            if renewed:
                self.last_renewal = self._clock.now()
                continue
            if self._observed_holder not in ("", self.identity):
                self._lost(f"the lease is held by {self._observed_holder}")
            if self._clock.now() - self.last_renewal >= self.settings.renew_deadline:
                self._lost(f"could not renew for {self.settings.renew_deadline:.0f} s")

    async def release(self) -> None:
        """Give the Lease up (holder cleared, duration 1 s) if we hold it."""
        if not self.is_leader:
            return
        self._set_leader(False)
        try:
            lease = await self._api.request(
                "GET", f"{self._path}/{self.settings.name}", resource="leases", retry=False
            )
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            now = _now_micro()
            lease["spec"] = {
                **spec,
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "renewTime": now,
                "acquireTime": now,
            }
            await self._api.request(
                "PUT", f"{self._path}/{self.settings.name}", body=lease, resource="leases", retry=False
            )
            self._log.info("released the lease")
        except (errors.ApiError, errors.TransportError) as exc:
            self._log.warning("could not release the lease", error=str(exc))

    def _lost(self, why: str) -> None:
        self._set_leader(False)
        self._log.error("lost the lease", why=why)
        raise LeaderLost(why)

    def _set_leader(self, leading: bool) -> None:
        if leading != self.is_leader:
            self.is_leader = leading
            self._on_change(leading)

    async def _attempt(self, *, budget: float | None = None) -> bool:
        """One try to acquire or renew; False on any failure (logged)."""
        try:
            async with asyncio.timeout(budget if budget is not None else self.settings.renew_deadline):
                return await self._try_acquire_or_renew()
        except (errors.ApiError, errors.TransportError, TimeoutError) as exc:
            self._log.info("lease attempt failed", error=f"{type(exc).__name__}: {exc}")
            return False

    async def _try_acquire_or_renew(self) -> bool:
        now = self._clock.now()
        duration = round(self.settings.lease_duration)
        try:
            lease = await self._api.request(
                "GET", f"{self._path}/{self.settings.name}", resource="leases", retry=False
            )
        except errors.NotFound:
            return await self._create(now, duration)
        meta = lease.get("metadata") or {}
        spec: dict[str, Any] = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        rv = str(meta.get("resourceVersion", ""))
        if rv != self._observed_rv:
            self._observed_rv, self._observed_at, self._observed_holder = rv, now, holder
        record_duration = float(spec.get("leaseDurationSeconds") or duration)
        if holder and holder != self.identity and now < self._observed_at + record_duration:
            return False
        stamp = _now_micro()
        new_spec = {
            **spec,
            "holderIdentity": self.identity,
            "leaseDurationSeconds": duration,
            "renewTime": stamp,
        }
        if holder != self.identity:
            new_spec["acquireTime"] = stamp
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        lease["spec"] = new_spec
        try:
            updated = await self._api.request(
                "PUT", f"{self._path}/{self.settings.name}", body=lease, resource="leases", retry=False
            )
        except errors.Conflict:
            return False  # someone else wrote first: lost the race
        self._observe(updated, now)
        return True

    async def _create(self, now: float, duration: int) -> bool:
        stamp = _now_micro()
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.settings.name, "namespace": self.settings.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": duration,
                "acquireTime": stamp,
                "renewTime": stamp,
                "leaseTransitions": 0,
            },
        }
        try:
            created = await self._api.request("POST", self._path, body=body, resource="leases", retry=False)
        except errors.Conflict:
            return False  # created by another candidate meanwhile
        self._observe(created, now)
        return True

    def _observe(self, lease: dict[str, Any], now: float) -> None:
        self._observed_rv = str((lease.get("metadata") or {}).get("resourceVersion", ""))
        self._observed_at = now
        self._observed_holder = self.identity
