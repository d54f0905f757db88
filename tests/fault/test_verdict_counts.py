"""What the fault verdict counts as an apply (tests/fault/verdict.py), on audit records
built here: a dry run stores nothing, so it is never a second apply of an object."""

from __future__ import annotations

import datetime

import pytest
import verdict
from simcluster import audit

pytestmark = pytest.mark.unit

AT = datetime.datetime(2026, 11, 28, 17, 15, 33, tzinfo=datetime.UTC)


def write(verb: str, *, resource: str = "pods", name: str = "validation-1", code: int = 200,
          dry: bool = False, seconds: float = 0.0, sub: str = "") -> audit.Write:  # fmt: skip
    return audit.Write(
        time=AT + datetime.timedelta(seconds=seconds), user="sro:replica-2", user_agent="sro/0.1.0",
        verb=verb, resource=resource, subresource=sub, namespace="ns", name=name, code=code,
        audit_id=f"{verb}-{seconds}", dry_run=dry,
    )  # fmt: skip


def test_dry_runs_node_patches_and_subresources_are_not_applies() -> None:
    writes = [
        write("patch", code=201, dry=True),  # a state's first objects, checked before any is written
        write("patch", code=201, seconds=0.05),
        write("patch", seconds=0.1),
        write("patch", sub="status", seconds=0.2),
        write("delete", seconds=0.3),
        write("patch", resource="nodes", name="node-1", seconds=0.4),
        write("patch", resource="specialresources", name="gpu", seconds=0.5),
    ]
    assert verdict.applies_per_object(writes) == {("pods", "ns", "validation-1"): 2}


def test_the_timeline_tells_a_dry_run_from_a_write() -> None:
    writes = [write("patch", code=201, dry=True), write("patch", code=201, seconds=0.05)]
    timeline = verdict._timeline(writes, ("pods", "ns", "validation-1"))
    assert timeline == "17:15:33.000000 replica-2 patch dry-run 201; 17:15:33.050000 replica-2 patch 201"
