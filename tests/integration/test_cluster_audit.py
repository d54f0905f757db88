"""The local cluster's audit log of writes (hack/lib/simcluster/audit.py) on the real API server.

A write by the test shows up once, with its verb, resource, namespace, name, code and
the test's user and User-Agent; a read is not logged at all; writes sro makes carry
``sro/<version>`` as their User-Agent, so they are told apart from the harness's own
writes although both run as the admin.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from simcluster import audit
from support import waiting

import sro
from sro import settings
from sro.kube import http

pytestmark = pytest.mark.integration

ADMIN = "sro-admin"  # the CN of the admin kubeconfig's client certificate (simcluster.pki)


def _raw_events(path: Path, name: str) -> list[dict[str, Any]]:
    events = []
    for line in path.read_bytes().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if (event.get("objectRef") or {}).get("name") == name:
            events.append(event)
    return events


def test_a_write_is_logged_with_its_verb_resource_name_and_user(cluster: Any, namespace: str) -> None:
    start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1)
    cluster.kubectl("create", "configmap", "audited", "-n", namespace, "--from-literal=a=1")

    def created() -> list[audit.Write]:
        return audit.matching(
            audit.since(audit.read(cluster.audit_log), start),
            verb="create",
            resource="configmaps",
            namespace=namespace,
            name="audited",
        )

    writes = waiting.wait_for_sync(created, timeout=10, message="the create in the audit log")
    assert len(writes) == 1
    (write,) = writes
    assert write.user == ADMIN
    assert write.user_agent.startswith("kubectl/")
    assert not write.by_sro
    assert write.code == 201
    assert write.subresource == ""
    assert write.api_group == ""
    assert write.audit_id
    assert start <= write.time <= datetime.datetime.now(datetime.UTC)
    assert audit.by_user([write], ADMIN) == [write]


def test_a_read_is_not_logged(cluster: Any, namespace: str) -> None:
    cluster.kubectl("create", "configmap", "read-me", "-n", namespace)
    cluster.kubectl("get", "configmap", "read-me", "-n", namespace)
    cluster.kubectl("get", "configmaps", "-n", namespace)
    # A later write of the same object is the barrier: once it is in the log, the reads
    # before it have been answered (and would have been logged).
    cluster.kubectl("label", "configmap", "read-me", "-n", namespace, "seen=yes")
    waiting.wait_for_sync(
        lambda: audit.matching(
            audit.read(cluster.audit_log), verb="patch", namespace=namespace, name="read-me"
        ),
        timeout=10,
        message="the label patch in the audit log",
    )
    verbs = sorted({e["verb"] for e in _raw_events(cluster.audit_log, "read-me")})
    assert verbs == ["create", "patch"]
    namespaced = [
        e for e in _raw_events_in(cluster.audit_log, namespace) if e["verb"] in ("get", "list", "watch")
    ]
    assert namespaced == []


def _raw_events_in(path: Path, namespace: str) -> list[dict[str, Any]]:
    out = []
    for line in path.read_bytes().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if (event.get("objectRef") or {}).get("namespace") == namespace:
            out.append(event)
    return out


async def test_sro_writes_carry_its_user_agent(cluster: Any, namespace: str) -> None:
    async with await http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))) as api:
        await api.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/configmaps",
            body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "by-sro"}},
            resource="configmaps",
            retry=False,
        )
        await api.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/configmaps/by-sro",
            body={"metadata": {"labels": {"touched": "yes"}}},
            content_type=http.MERGE_PATCH,
            resource="configmaps",
        )
    cluster.kubectl("delete", "configmap", "by-sro", "-n", namespace)

    def all_three() -> list[audit.Write]:
        writes = audit.matching(audit.read(cluster.audit_log), namespace=namespace, name="by-sro")
        return writes if len(writes) == 3 else []

    writes = waiting.wait_for_sync(all_three, timeout=10, message="three writes of by-sro in the audit log")
    ours = audit.by_agent(writes, audit.SRO_AGENT_PREFIX)
    assert [(w.verb, w.user_agent) for w in ours] == [
        ("create", f"sro/{sro.__version__}"),
        ("patch", f"sro/{sro.__version__}"),
    ]
    assert all(w.user == ADMIN for w in writes)
    counts = audit.count_by(writes, key=lambda w: (w.by_sro, w.verb))
    assert counts == {(True, "create"): 1, (True, "patch"): 1, (False, "delete"): 1}
