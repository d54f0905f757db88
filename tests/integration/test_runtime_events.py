"""Events are posted once per transition, on the real API server.

Covers: a POST of an Event sent again (what a retry after a lost answer does) is answered
AlreadyExists, counted as posted, and leaves one Event (the audit log shows the one 201
and the refused second); a transition recorded again from the same status (a pass
started over after a kill or a failed status write) posts nothing new; an unchanged
status posts nothing; a later transition with the very same Event posts a second one.
"""

from __future__ import annotations

import datetime
import uuid
from pathlib import Path
from typing import Any

import pytest
from simcluster import audit
from support import waiting

from sro import settings
from sro.apply import ssa
from sro.engine import status_writes
from sro.kube import discovery, http
from sro.status import events

pytestmark = pytest.mark.integration

CRD_FILE = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "sro.dev_specialresources.yaml"
DONE = events.Event(
    type="Normal", reason=events.STATE_COMPLETED, message="state-driver is complete on 2 nodes"
)


@pytest.fixture
def specialresource(cluster: Any) -> Any:
    """A SpecialResource of the test's own (no operator runs here: nothing acts on it)."""
    cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=events-test", "-f", str(CRD_FILE)
    )
    cluster.kubectl("wait", "--for=condition=Established", "crd/specialresources.sro.dev", "--timeout=60s")
    name = f"events-{uuid.uuid4().hex[:8]}"
    cluster.create({"apiVersion": "sro.dev/v1alpha1", "kind": "SpecialResource", "metadata": {"name": name}})
    body = cluster.kubectl_json("get", "specialresource", name)
    yield body
    cluster.kubectl("delete", "specialresource", name, "--ignore-not-found", "--wait=false", check=False)


def events_about(cluster: Any, uid: str) -> list[dict[str, Any]]:
    listing = cluster.kubectl_json(
        "get",
        "events.events.k8s.io",
        "-n",
        events.EVENTS_NAMESPACE,
        "--field-selector",
        f"regarding.uid={uid}",
    )
    return list(listing["items"])


async def test_an_event_posted_again_is_already_there_and_there_once(
    cluster: Any, specialresource: Any
) -> None:
    name, uid = specialresource["metadata"]["name"], specialresource["metadata"]["uid"]
    async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:
        writer = ssa.Writer(api=api, discovery=discovery.Discovery(api))
        event_name = events.name(DONE, sr_name=name, sr_uid=uid, transition="1")
        body = events.body(
            DONE,
            name=event_name,
            sr_name=name,
            sr_uid=uid,
            instance="test",
            now=datetime.datetime.now(datetime.UTC),
        )
        first = await writer.post_event(body)
        again = await writer.post_event(body)
    assert first["metadata"]["name"] == event_name
    assert again == {}, "AlreadyExists is an Event already posted"
    assert [e["metadata"]["name"] for e in events_about(cluster, uid)] == [event_name]

    def both() -> list[audit.Write]:
        writes = audit.matching(
            audit.by_agent(audit.read(cluster.audit_log), audit.SRO_AGENT_PREFIX),
            verb="create",
            resource="events",
            name=event_name,
        )
        return writes if len(writes) == 2 else []

    writes = waiting.wait_for_sync(both, timeout=10, message="both POSTs in the audit log")
    assert [w.code for w in writes] == [201, 409]


def ready_since(when: str) -> dict[str, Any]:
    return {
        "type": "Ready",
        "status": "True",
        "reason": "AllStatesComplete",
        "message": "",
        "lastTransitionTime": when,
    }


async def test_one_event_per_transition_through_the_status_writer(cluster: Any, specialresource: Any) -> None:
    name, uid = specialresource["metadata"]["name"], specialresource["metadata"]["uid"]
    async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:
        statuses = status_writes.StatusWriter(ssa.Writer(api=api, discovery=discovery.Discovery(api)))
        complete = {"state": "Ready", "phase": "Ready", "conditions": [ready_since("2026-11-25T01:00:00Z")]}
        assert await statuses.record(name=name, uid=uid, current={}, status=complete, events_=[DONE])
        assert len(events_about(cluster, uid)) == 1
        # The same transition again, as a pass that starts over from the same status does
        # (the operator killed after the Event, before the status; a status write that
        # failed; a reconcile retried before its cache showed the status): the Event has
        # the same name and is not posted twice.
        assert await statuses.record(name=name, uid=uid, current={}, status=complete, events_=[DONE])
        assert len(events_about(cluster, uid)) == 1
        # Nothing changed: neither status nor Event.
        same = await statuses.record(name=name, uid=uid, current=complete, status=complete, events_=[DONE])
        assert not same
        # Later the state goes back to progressing and completes again: a new transition.
        progressing = {
            "state": "Progressing",
            "phase": "Progressing",
            "conditions": [
                {**ready_since("2026-11-25T01:30:00Z"), "status": "False", "reason": "Progressing"}
            ],
        }
        assert await statuses.record(name=name, uid=uid, current=complete, status=progressing, events_=[])
        again = {**complete, "conditions": [ready_since("2026-11-25T02:00:00Z")]}
        assert await statuses.record(name=name, uid=uid, current=progressing, status=again, events_=[DONE])
    posted = events_about(cluster, uid)
    assert len(posted) == 2
    assert {e["reason"] for e in posted} == {events.STATE_COMPLETED}
    written = cluster.kubectl_json("get", "specialresource", name)["status"]
    assert written["conditions"][0]["lastTransitionTime"] == "2026-11-25T02:00:00Z"


async def test_a_status_written_by_someone_else_is_told_from_its_own(
    cluster: Any, specialresource: Any
) -> None:
    # What lets the watch of SpecialResources skip the echo of sro's own status writes and
    # still wake a reconcile for a status someone else wrote (a former leader's late
    # write, a hand edit), which that reconcile then writes back. The echoes are what the
    # watch delivers for each write: its status at the resourceVersion the write returned
    # (read back, another operator of the session could have written since).
    name, uid = specialresource["metadata"]["name"], specialresource["metadata"]["uid"]

    def echo(status: dict[str, Any], version: int) -> dict[str, Any]:
        meta = {**specialresource["metadata"], "resourceVersion": str(version)}
        return {**specialresource, "metadata": meta, "status": status}

    async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:
        statuses = status_writes.StatusWriter(ssa.Writer(api=api, discovery=discovery.Discovery(api)))
        assert not statuses.is_own(name, specialresource), "nothing written yet"
        progressing = {"state": "Progressing", "phase": "Progressing"}
        assert await statuses.record(name=name, uid=uid, current={}, status=progressing, events_=())
        first = echo(progressing, statuses.written_version(name))
        assert statuses.is_own(name, first)
        ready = {"state": "Ready", "phase": "Ready", "conditions": [ready_since("2026-11-25T01:00:00Z")]}
        assert await statuses.record(name=name, uid=uid, current=progressing, status=ready, events_=())
        assert statuses.written_version(name) > int(first["metadata"]["resourceVersion"])
        assert statuses.is_own(name, echo(ready, statuses.written_version(name)))
        assert statuses.is_own(name, first), "an older write of its own, delivered late"
        stale = '{"status": {"state": "Progressing", "phase": "Progressing", "conditions": null}}'
        foreign = cluster.kubectl_json(
            "patch", "specialresource", name, "--subresource=status", "--type=merge", "-p", stale
        )
        assert foreign["status"]["state"] == "Progressing"
        assert not statuses.is_own(name, foreign), "the same content it once wrote, but after its last write"
