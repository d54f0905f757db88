"""Which pods gone since the last pass prove their state ran (``Memory.finished``).

The pods cache logs every pod deleted after it succeeded; a pass reads what is new since
the last and keeps only its SpecialResource's own bare pods that sro did not delete
itself and that were not made again. Real stores, fed as the reflector feeds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from sro.cache import indexes, projections, store
from sro.engine import memory as memory_
from sro.model import desired, views
from sro.model import specialresource as sr_model
from sro.plan import actions, lifecycle

pytestmark = pytest.mark.unit

NOW = datetime(2026, 1, 1, tzinfo=UTC)

SR_UID = "sr-uid"


def special_resource() -> sr_model.SpecialResource:
    return sr_model.parse(
        {
            "apiVersion": "sro.dev/v1alpha1",
            "kind": "SpecialResource",
            "metadata": {"name": "gpu", "uid": SR_UID, "generation": 1},
            "spec": {"recipe": "nvidia-gpu", "namespace": "gpu-ops"},
        }
    )


def pod(
    name: str, *, uid: str, phase: str, owner: str = "gpu", owner_uid: str = SR_UID, ns: str = "gpu-ops"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": uid,
            "resourceVersion": uid,
            "labels": {"sro.dev/owner": owner},
            "ownerReferences": [
                {
                    "apiVersion": "sro.dev/v1alpha1",
                    "kind": "SpecialResource",
                    "name": owner,
                    "uid": owner_uid,
                    "controller": True,
                }
            ],
        },
        "spec": {"nodeName": "n1"},
        "status": {"phase": phase},
    }


class Reader:
    """The pods a pass reads and the log ``Memory.finished`` reads, from a real pods store."""

    def __init__(self, pods: store.Store[views.PodView]) -> None:
        self._pods = pods

    def pods(self, namespace: str) -> Sequence[views.PodView]:
        return self._pods.values(namespace=namespace)

    def pods_gone(self, since: int | None) -> tuple[int, Sequence[views.PodView]]:
        return self._pods.gone_since(since)


def read(
    memory: memory_.Memory, reader: Reader, sr: sr_model.SpecialResource
) -> frozenset[desired.ObjectRef]:
    """What a pass hands the planner: the log read against the pods the pass reads."""
    live = {(p.namespace, p.name) for p in reader.pods(sr.spec.namespace)}
    return memory.finished(reader, sr, live=live)  # type: ignore[arg-type]


def ref(name: str) -> desired.ObjectRef:
    return desired.ObjectRef(api_version="v1", kind="Pod", namespace="gpu-ops", name=name)


def collected(pods: store.Store[views.PodView], body: dict[str, Any]) -> None:
    pods.upsert(body)
    pods.delete(body)


def test_only_its_own_pods_gone_since_the_last_pass_by_someone_else_and_not_made_again() -> None:
    pods = store.Store(
        resource="pods",
        project=projections.pod,
        indexers=indexes.for_kind("v1", "Pod"),
        keep_gone=projections.kept_when_gone("v1", "Pod"),
    )
    reader = Reader(pods)
    sr = special_resource()
    memory = memory_.Memory()
    collected(pods, pod("before", uid="u0", phase="Succeeded"))
    assert read(memory, reader, sr) == frozenset()  # the first pass starts from now

    memory.planned(
        actions.Plan(
            apply=(), node_labels=(), status={},  # type: ignore[typeddict-item]
            delete=(lifecycle.Deletion(ref=ref("closed"), uid="u2"),),
        ),
        now=NOW,
    )  # fmt: skip
    collected(pods, pod("validate-n1", uid="u1", phase="Succeeded"))
    collected(pods, pod("closed", uid="u2", phase="Succeeded"))  # sro closed it: no proof
    collected(pods, pod("again", uid="u3", phase="Succeeded"))
    pods.upsert(pod("again", uid="u4", phase="Pending"))  # made again since
    collected(pods, pod("theirs", uid="u5", phase="Succeeded", owner="other", owner_uid="other-uid"))
    collected(pods, pod("elsewhere", uid="u6", phase="Succeeded", ns="default"))
    collected(pods, pod("stray", uid="u7", phase="Succeeded", owner_uid="an-earlier-gpu"))
    assert read(memory, reader, sr) == {ref("validate-n1")}
    assert read(memory, reader, sr) == frozenset()  # read once


def test_proofs_the_plan_hands_on_come_back_until_the_pod_is_made_again() -> None:
    pods = store.Store(
        resource="pods", project=projections.pod, keep_gone=projections.kept_when_gone("v1", "Pod")
    )
    reader = Reader(pods)
    sr = special_resource()
    memory = memory_.Memory()
    assert read(memory, reader, sr) == frozenset()
    handed = actions.Plan(
        apply=(), node_labels=(), delete=(), status={}, finished=frozenset({ref("validate-n1")})
    )  # type: ignore[typeddict-item]
    memory.planned(handed, now=NOW)
    assert read(memory, reader, sr) == {ref("validate-n1")}
    assert read(memory, reader, sr) == {ref("validate-n1")}  # until a plan drops it
    pods.upsert(pod("validate-n1", uid="u9", phase="Pending"))  # made again after all
    assert read(memory, reader, sr) == frozenset()
