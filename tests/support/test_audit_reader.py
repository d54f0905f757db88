"""The audit log reader (hack/lib/simcluster/audit.py): parsing, a half-written last line, helpers."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from simcluster import audit

pytestmark = pytest.mark.unit


def event(
    verb: str,
    name: str,
    *,
    stage: str = "ResponseComplete",
    at: str = "2026-11-25T03:00:00.123456Z",
    agent: str = "sro/0.1.0",
    user: str = "sro-admin",
    code: int = 200,
    sub: str = "",
    uri: str = "/api/v1/namespaces/ns/configmaps",
) -> dict[str, Any]:
    ref = {"resource": "configmaps", "namespace": "ns", "name": name, "apiVersion": "v1"}
    if sub:
        ref["subresource"] = sub
    return {
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": f"id-{name}-{verb}",
        "stage": stage, "verb": verb, "user": {"username": user, "groups": ["system:masters"]},
        "userAgent": agent, "objectRef": ref, "responseStatus": {"metadata": {}, "code": code},
        "requestReceivedTimestamp": at, "stageTimestamp": at, "requestURI": uri,
    }  # fmt: skip


def write_log(path: Path, events: list[dict[str, Any]], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + tail)
    return path


def test_completed_writes_only_and_a_half_written_last_line_is_skipped(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "audit.log",
        [
            event("create", "a", code=201),
            event("get", "a"),
            event("patch", "a", stage="ResponseStarted"),
            event("patch", "a", sub="status", agent="kubectl/v1.36.3"),
        ],
        tail='{"kind":"Event","stage":"ResponseComplete","verb":"dele',
    )
    writes = audit.read(log)
    assert [(w.verb, w.subresource, w.code) for w in writes] == [
        ("create", "", 201),
        ("patch", "status", 200),
    ]
    first = writes[0]
    assert first == audit.Write(
        time=datetime.datetime(2026, 11, 25, 3, 0, 0, 123456, tzinfo=datetime.UTC),
        user="sro-admin", user_agent="sro/0.1.0", verb="create", resource="configmaps", subresource="",
        namespace="ns", name="a", code=201, audit_id="id-a-create",
    )  # fmt: skip
    assert first.by_sro and first.succeeded
    assert not writes[1].by_sro


def test_a_dry_run_is_told_from_a_write(tmp_path: Path) -> None:
    uri = "/api/v1/namespaces/ns/configmaps/a?dryRun=All&fieldManager=sro&force=true"
    log = write_log(tmp_path / "audit.log", [event("patch", "a", code=201, uri=uri), event("patch", "a")])
    assert [w.dry_run for w in audit.read(log)] == [True, False]


def test_missing_log_is_empty(tmp_path: Path) -> None:
    assert audit.read(tmp_path / "absent.log") == []


def test_helpers_filter_and_count(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "audit.log",
        [
            event("create", "a", at="2026-11-25T03:00:00Z"),
            event("update", "a", at="2026-11-25T03:00:05Z", user="other"),
            event("delete", "b", at="2026-11-25T03:00:10Z", agent="kubectl/v1.36.3"),
        ],
    )
    writes = audit.read(log)
    assert [w.verb for w in audit.by_user(writes, "other")] == ["update"]
    assert [w.verb for w in audit.since(writes, datetime.datetime(2026, 11, 25, 3, 0, 5))] == [
        "update",
        "delete",
    ]
    assert [w.name for w in audit.by_agent(writes, audit.SRO_AGENT_PREFIX)] == ["a", "a"]
    assert [w.verb for w in audit.matching(writes, name="a", verb="update")] == ["update"]
    assert audit.count_by(writes, key=lambda w: w.name) == {"a": 2, "b": 1}


def test_tally_splits_by_verb_resource_and_subresource_most_first(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "audit.log",
        [
            event("patch", "a"),
            event("patch", "a", sub="status"),
            event("patch", "b", sub="status"),
            event("create", "c"),
        ],
    )
    tally = audit.tally(audit.read(log))
    assert tally == {"patch configmaps/status": 2, "patch configmaps": 1, "create configmaps": 1}
    assert next(iter(tally)) == "patch configmaps/status"


def test_policy_logs_every_mutating_verb_at_metadata_and_nothing_else() -> None:
    rules = audit.POLICY["rules"]
    assert isinstance(rules, list)
    assert rules[-1] == {"level": "None"}
    assert {"level": "Metadata", "verbs": list(audit.MUTATING_VERBS)} in rules
    flags = audit.apiserver_flags(policy=Path("/p.yaml"), log=Path("/l.log"))
    assert "--audit-log-maxsize=0" in flags and "--audit-log-format=json" in flags
