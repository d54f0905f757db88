"""Lease rules against the real API server, one attempt at a time, with a manual clock.

Covers: of candidates racing for an absent Lease exactly one wins; a held Lease is
not taken before it has gone unchanged for its duration on the local clock, and is
taken after; a released Lease is taken at once; renewing keeps it; a leader that
sees another holder raises ``LeaderLost``; a leader past its renew deadline writes nothing.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from sro import errors, settings
from sro.apply import ssa
from sro.kube import discovery, http, lease
from sro.model import desired
from sro.queue import clock

pytestmark = pytest.mark.integration


def elector(
    api: http.Api, namespace: str, identity: str, c: clock.Clock | None = None
) -> lease.LeaderElector:
    s = settings.LeaseSettings(
        namespace=namespace,
        name="race",
        identity=identity,
        lease_duration=15,
        renew_deadline=10,
        retry_period=0.1,
    )
    return lease.LeaderElector(api=api, settings=s, clock=c)


async def test_of_candidates_racing_for_an_absent_lease_exactly_one_wins(
    cluster: Any, namespace: str
) -> None:
    async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:
        candidates = [elector(api, namespace, f"c{i}") for i in range(4)]
        won = await asyncio.gather(*(c._try_acquire_or_renew() for c in candidates))
        assert sum(won) == 1
        holder = cluster.kubectl_json("get", "lease", "race", "-n", namespace)["spec"]["holderIdentity"]
        assert holder == candidates[won.index(True)].identity


async def test_a_lease_is_taken_only_after_it_went_unchanged_for_its_duration(
    cluster: Any, namespace: str
) -> None:
    async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:
        a = elector(api, namespace, "a")
        assert await a._try_acquire_or_renew()
        local = clock.ManualClock(1000.0)
        b = elector(api, namespace, "b", local)
        assert not await b._try_acquire_or_renew(), "a fresh lease is respected"
        local.advance(14.0)
        assert not await b._try_acquire_or_renew()
        assert await a._try_acquire_or_renew(), "the holder renews"
        local.advance(14.0)
        assert not await b._try_acquire_or_renew(), "the renewal restarted b's count"
        local.advance(15.5)
        assert await b._try_acquire_or_renew(), "unchanged for its duration: taken"
        spec = cluster.kubectl_json("get", "lease", "race", "-n", namespace)["spec"]
        assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
        assert not await a._try_acquire_or_renew(), "the old holder does not take it back"


async def test_a_released_lease_is_taken_at_once_and_a_leader_seeing_another_holder_stops(
    cluster: Any, namespace: str
) -> None:
    async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:
        a = elector(api, namespace, "a")
        b = elector(api, namespace, "b", clock.ManualClock())
        await asyncio.wait_for(a.acquire(), 30)
        assert not await b._try_acquire_or_renew()
        await a.release()
        spec = cluster.kubectl_json("get", "lease", "race", "-n", namespace)["spec"]
        assert not spec.get("holderIdentity") and spec["leaseDurationSeconds"] == 1
        assert await b._try_acquire_or_renew(), "a released lease needs no waiting"
        a.is_leader = True  # a still believes it leads: its next renewal must find out
        with pytest.raises(lease.LeaderLost):
            await asyncio.wait_for(a.hold(), 30)
        assert not a.is_leader


async def test_a_leader_that_cannot_renew_past_the_deadline_gives_up(cluster: Any, namespace: str) -> None:
    s = settings.LeaseSettings(
        namespace=namespace, name="doomed", identity="a", lease_duration=6, renew_deadline=3, retry_period=0.3
    )
    async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:
        a = lease.LeaderElector(api=api, settings=s)
        await asyncio.wait_for(a.acquire(), 30)
        # The Lease's namespace goes away: every renewal now fails (Forbidden, then NotFound).
        cluster.kubectl("delete", "namespace", namespace, "--wait=false")
        with pytest.raises(lease.LeaderLost, match="could not renew"):
            await asyncio.wait_for(a.hold(), 120)
        assert not a.is_leader
        print(f"\ngave up {time.monotonic() - a.last_renewal:.1f} s after the last renewal (deadline 3 s)")


async def test_a_leader_that_stalled_past_its_renew_deadline_sends_no_write(
    cluster: Any, namespace: str
) -> None:
    """The write fence: a process whose loop stalled past the renew deadline (here: its clock
    jumps, as after a long pause) refuses every mutating request before sending it, even
    though ``hold`` has not noticed yet; reads still go through."""
    async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:
        local = clock.ManualClock(1000.0)
        a = elector(api, namespace, "a", local)
        assert not a.may_write(), "a standby may not write"
        await asyncio.wait_for(a.acquire(), 30)
        writer = ssa.Writer(api=api, discovery=discovery.Discovery(api), fence=a.may_write)
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fenced", "namespace": namespace}}
        await writer.apply(cm)
        local.advance(9.0)
        assert a.may_write(), "within the renew deadline"
        local.advance(1.5)
        assert a.is_leader and not a.may_write(), "past the deadline: still believes it leads, may not write"
        changed = {**cm, "data": {"k": "v"}}
        ref = desired.ObjectRef.of(cm)
        for attempt in (
            writer.apply(changed),
            writer.apply(changed, dry_run=True),
            writer.delete(ref),
            writer.create({**cm, "metadata": {"name": "other", "namespace": namespace}}),
            writer.patch_node("no-such-node", {"metadata": {"labels": {"x": "y"}}}),
        ):
            with pytest.raises(errors.NotLeader):
                await attempt
        live = await writer.get(ref)
        assert "data" not in live, "nothing was sent"
        assert await a._try_acquire_or_renew()
        a.last_renewal = local.now()
        assert a.may_write(), "renewed: writes again"
        await writer.apply(changed)
        assert (await writer.get(ref))["data"] == {"k": "v"}
