"""The operand namespace's pods a pass reads (``Memory.pods_seen``): patched from the pod
cache's journal pass after pass, always equal to reading every pod again.

Real stores, fed as the reflector feeds them (upserts, deletions, a relist), and a real
projection; the reader is the engine's port over them. Covers: any sequence of pod
changes, owner changes and passes gives what a fresh read gives, and the ``Observed`` made
of it finds each of its pods by name and holds its bare pods as objects; an unchanged bare pod
keeps its owned object (the walk compares by identity); a journal the pass fell behind
(a new store after a restart of it) is read afresh; a pod sro deleted reads as deleting
until the cache shows the deletion, and the walk hears of it on its node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sro.cache import indexes, projections, store
from sro.engine import execute
from sro.engine import memory as memory_
from sro.model import desired, views
from sro.model import specialresource as sr_model
from sro.plan import inputs, lifecycle, pods_seen, walk_memo

pytestmark = pytest.mark.unit

NS = "gpu-ops"
SR_UID = "sr-uid"
OWNERS = ("ds-a", "ds-b", "job-c")


def special_resource(namespace: str = NS) -> sr_model.SpecialResource:
    return sr_model.parse(
        {
            "apiVersion": "sro.dev/v1alpha1",
            "kind": "SpecialResource",
            "metadata": {"name": "gpu", "uid": SR_UID, "generation": 1},
            "spec": {"recipe": "nvidia-gpu", "namespace": namespace},
        }
    )


def new_store() -> store.Store[views.PodView]:
    return store.Store(
        resource="pods",
        project=projections.pod,
        indexers=indexes.for_kind("v1", "Pod"),
        keep_gone=projections.kept_when_gone("v1", "Pod"),
        journal_index=indexes.journal_for("v1", "Pod"),
    )


class Reader:
    """The engine's reads of pods (``engine.ports.Reader``), over a real store."""

    def __init__(self, pods: store.Store[views.PodView]) -> None:
        self.store = pods
        self.nodes = new_store()  # the node cursor is read beside the pod cursor

    def pods(self, namespace: str) -> Sequence[views.PodView]:
        return self.store.values(namespace=namespace)

    def pod(self, namespace: str, name: str) -> views.PodView | None:
        return self.store.find(name, namespace=namespace)

    def cursors(self) -> tuple[store.Cursor, store.Cursor]:
        return (self.nodes.cursor, self.store.cursor)

    def changed_since(
        self, cursors: tuple[store.Cursor, store.Cursor]
    ) -> tuple[store.Since | None, store.Since | None]:
        return (self.nodes.changed_since(cursors[0]), self.store.changed_since(cursors[1]))


NOTHING = desired.DesiredState(
    sr_name="gpu", namespace=NS, recipe="nvidia-gpu", states=(), objects=(), nodes=(), kernel_groups={}
)
_versions = iter(range(1, 10**9))


def body(
    name: str, *, ns: str, kind: str, owner: str, phase: str, labelled: bool, node: str = "n1"
) -> dict[str, Any]:
    """A pod as the API server sends it: owned by the SpecialResource, or by one of
    ``OWNERS`` (kind ``kind``), with the owner label or without, on ``node`` ("": not
    scheduled yet)."""
    version = str(next(_versions))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"{name}-{version}",
            "resourceVersion": version,
            "labels": {"sro.dev/owner": "gpu"} if labelled else {},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": kind, "name": owner, "uid": owner, "controller": True}
            ],
        },
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase},
    }


def fresh(reader: Reader, sr: sr_model.SpecialResource, owners: frozenset[str]) -> pods_seen.PodsSeen:
    return pods_seen.read(reader.pods(sr.spec.namespace), sr=sr, owners=owners)


def assert_same(a: pods_seen.PodsSeen, b: pods_seen.PodsSeen) -> None:
    assert dict(a.pods) == dict(b.pods)
    assert dict(a.bare) == dict(b.bare)
    assert dict(a.relevant) == dict(b.relevant)
    assert dict(a.workload) == dict(b.workload)
    assert {n: dict(pods) for n, pods in a.on_node.items()} == {
        n: dict(pods) for n, pods in b.on_node.items()
    }
    assert (a.namespace, a.sr_uid, a.owners) == (b.namespace, b.sr_uid, b.owners)


upsert = st.tuples(
    st.just("upsert"),
    st.sampled_from(["p0", "p1", "p2", "p3", "p4", "p5"]),
    st.sampled_from([NS, "elsewhere"]),
    st.sampled_from(["SpecialResource", "DaemonSet", "Job", "ReplicaSet", "StatefulSet"]),
    st.sampled_from([SR_UID, *OWNERS, "other"]),
    st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
    st.booleans(),
    st.sampled_from(["n1", "n2", ""]),  # scheduled since, or not yet
)
delete = st.tuples(st.just("delete"), st.sampled_from(["p0", "p1", "p2", "p3", "p4", "p5"]), st.just(NS))
relist = st.tuples(st.just("relist"), st.sampled_from(["p0", "p1", "p2"]))  # one pod missing from it
names = st.sampled_from(["p0", "p1", "p2", "p3", "p4", "p5"])
sro_deletes = st.tuples(st.just("sro deletes"), names)  # its deletion taken, not cached yet
terminating = st.tuples(st.just("terminating"), names)  # the cache shows a deletion
step = st.one_of(
    upsert,
    delete,
    relist,
    sro_deletes,
    terminating,
    st.tuples(st.just("pass"), st.frozensets(st.sampled_from(OWNERS))),
)


def deleted_by_sro(memory: memory_.Memory, pod: dict[str, Any]) -> None:
    """What the engine tells the memory after a pass whose deletion of ``pod`` was taken."""
    meta = pod["metadata"]
    ref = desired.ObjectRef(api_version="v1", kind="Pod", namespace=meta["namespace"], name=meta["name"])
    memory.executed(
        execute.Executed(failures=(), deleted=(lifecycle.Deletion(ref=ref, uid=meta["uid"]),)), wanted=NOTHING
    )


def shown(
    reader: Reader, sr: sr_model.SpecialResource, owners: frozenset[str], ours: dict[str, None]
) -> pods_seen.PodsSeen:
    """A fresh read, with every pod whose uid sro deleted shown deleting."""
    pods = (
        dataclasses.replace(p, deleting=True) if p.uid in ours else p for p in reader.pods(sr.spec.namespace)
    )
    return pods_seen.read(pods, sr=sr, owners=owners)


@settings(max_examples=150, deadline=None)
@given(st.lists(step, max_size=40))
def test_passes_read_what_a_fresh_read_of_the_cache_gives(steps: list[tuple[Any, ...]]) -> None:
    """... with the pods sro deleted shown deleting, whatever the cache shows of them since."""
    reader, sr, memory = Reader(new_store()), special_resource(), memory_.Memory()
    bodies: dict[tuple[str, str], dict[str, Any]] = {}  # what the API server holds
    ours: dict[str, None] = {}  # uids of the pods sro deleted
    for op, *args in steps:
        if op == "upsert":
            name, ns, kind, owner, phase, labelled, node = args
            bodies[(ns, name)] = body(
                name, ns=ns, kind=kind, owner=owner, phase=phase, labelled=labelled, node=node
            )
            reader.store.upsert(bodies[(ns, name)])
        elif op == "delete":
            name, ns = args
            if bodies.pop((ns, name), None) is not None:
                reader.store.delete({"metadata": {"name": name, "namespace": ns}})
        elif op == "relist":  # the watch expired; the pod was deleted meanwhile
            bodies.pop((NS, args[0]), None)
            reader.store.replace(list(bodies.values()), resource_version=str(next(_versions)))
        elif op == "sro deletes":
            if (pod := bodies.get((NS, args[0]))) is not None:
                deleted_by_sro(memory, pod)
                ours[pod["metadata"]["uid"]] = None
        elif op == "terminating":
            if (pod := bodies.get((NS, args[0]))) is not None:
                meta = {
                    **pod["metadata"],
                    "deletionTimestamp": "2026-01-01T00:00:00Z",
                    "resourceVersion": str(next(_versions)),
                }
                bodies[(NS, args[0])] = {**pod, "metadata": meta}
                reader.store.upsert(bodies[(NS, args[0])])
        else:
            (owners,) = args
            read = memory.pods_seen(reader, sr, owners=owners)
            assert_same(read, shown(reader, sr, owners, ours))
            seen = inputs.observe(
                sr, wanted=NOTHING, nodes=(), owned=(), pods=read, previous={}, recipe_source="built-in"
            )
            assert seen.pods_by_name == {(p.namespace, p.name): p for p in seen.pods}
            # Each node's pods, read from the kept index, as an index of every pod gives them.
            built = dataclasses.replace(seen, pods_on=None)
            assert dict(seen.pods_by_node) == dict(built.pods_by_node)
            assert sum(map(len, seen.pods_by_node.values())) == len(seen.pods)
            assert {ref for ref in seen.objects if ref.kind == "Pod"} == set(read.bare)


def test_an_unchanged_bare_pod_keeps_its_object_and_a_changed_one_is_made_again() -> None:
    reader, sr, memory = Reader(new_store()), special_resource(), memory_.Memory()
    for name in ("a", "b"):
        reader.store.upsert(
            body(name, ns=NS, kind="SpecialResource", owner=SR_UID, phase="Running", labelled=True)
        )
    first = memory.pods_seen(reader, sr, owners=frozenset())
    reader.store.upsert(
        body("b", ns=NS, kind="SpecialResource", owner=SR_UID, phase="Succeeded", labelled=True)
    )
    second = memory.pods_seen(reader, sr, owners=frozenset())
    (a1, b1), (a2, b2) = (
        sorted(seen.bare.values(), key=lambda live: live.ref.name) for seen in (first, second)
    )
    assert a2 is a1
    assert b2 is not b1 and b2.phase == "Succeeded"
    assert_same(second, fresh(reader, sr, frozenset()))


def test_a_new_store_and_a_new_namespace_are_read_afresh() -> None:
    reader, sr, memory = Reader(new_store()), special_resource(), memory_.Memory()
    reader.store.upsert(body("a", ns=NS, kind="DaemonSet", owner="ds-a", phase="Running", labelled=False))
    assert set(memory.pods_seen(reader, sr, owners=frozenset({"ds-a"})).relevant) == {(NS, "a")}
    restarted = Reader(new_store())  # another store: its journal knows nothing of the last cursor
    restarted.store.upsert(body("b", ns=NS, kind="DaemonSet", owner="ds-a", phase="Running", labelled=False))
    assert set(memory.pods_seen(restarted, sr, owners=frozenset({"ds-a"})).relevant) == {(NS, "b")}
    # A pod already in the namespace the SpecialResource moves to, before the last pass.
    restarted.store.upsert(
        body("c", ns="elsewhere", kind="DaemonSet", owner="ds-a", phase="Running", labelled=False)
    )
    assert set(memory.pods_seen(restarted, sr, owners=frozenset({"ds-a"})).relevant) == {(NS, "b")}
    moved = special_resource(namespace="elsewhere")
    assert set(memory.pods_seen(restarted, moved, owners=frozenset({"ds-a"})).relevant) == {
        ("elsewhere", "c")
    }


def test_a_record_of_another_namespace_is_never_patched() -> None:
    reader, sr = Reader(new_store()), special_resource()
    last = fresh(reader, sr, frozenset())
    with pytest.raises(ValueError, match="not for elsewhere/gpu"):
        pods_seen.patched(
            last,
            sr=special_resource(namespace="elsewhere"),
            owners=frozenset(),
            changed=(),
            find=lambda _: None,
        )


def test_the_pods_of_replicasets_and_statefulsets_are_kept_as_workload_pods() -> None:
    reader, sr, memory = Reader(new_store()), special_resource(), memory_.Memory()
    bodies = {}
    for name, kind in (
        ("g", "ReplicaSet"),
        ("db", "StatefulSet"),
        ("d", "DaemonSet"),
        ("v", "SpecialResource"),
    ):
        owner = SR_UID if kind == "SpecialResource" else f"{name}-owner"
        bodies[name] = body(name, ns=NS, kind=kind, owner=owner, phase="Running", labelled=True)
        reader.store.upsert(bodies[name])
    first = memory.pods_seen(reader, sr, owners=frozenset())
    assert set(first.workload) == {(NS, "g"), (NS, "db")}
    reader.store.delete(bodies["g"])
    assert set(memory.pods_seen(reader, sr, owners=frozenset()).workload) == {(NS, "db")}
    observed = inputs.observe(
        sr, wanted=NOTHING, nodes=(), owned=(), pods=memory.pods_seen(reader, sr, owners=frozenset()),
        previous={}, recipe_source="built-in",
    )  # fmt: skip
    assert [p.name for p in observed.workload_pods] == ["db"]


def test_a_pod_scheduled_between_passes_is_read_on_its_node_only_and_the_last_record_keeps_its_own() -> None:
    """A DaemonSet's pod made before the scheduler placed it, then bound: the next pass,
    patched from the last, files it under its node and nowhere else, as a fresh read does;
    the last pass's record still shows it where it was then."""
    reader, sr, memory = Reader(new_store()), special_resource(), memory_.Memory()
    owners = frozenset({"ds-a"})
    for name, node in (("a", ""), ("b", "n1")):
        reader.store.upsert(
            body(name, ns=NS, kind="DaemonSet", owner="ds-a", phase="Pending", labelled=False, node=node)
        )
    first = memory.pods_seen(reader, sr, owners=owners)
    assert {n: set(p) for n, p in first.on_node.items()} == {"": {(NS, "a")}, "n1": {(NS, "b")}}
    reader.store.upsert(body("a", ns=NS, kind="DaemonSet", owner="ds-a", phase="Running", labelled=False))
    second = memory.pods_seen(reader, sr, owners=owners)
    assert {n: set(p) for n, p in second.on_node.items()} == {"n1": {(NS, "a"), (NS, "b")}}
    assert_same(second, fresh(reader, sr, owners))
    assert {n: set(p) for n, p in first.on_node.items()} == {"": {(NS, "a")}, "n1": {(NS, "b")}}
    seen = inputs.observe(
        sr, wanted=NOTHING, nodes=(), owned=(), pods=second, previous={}, recipe_source="built-in"
    )
    assert [p.name for p in seen.pods_by_node["n1"]] == ["a", "b"] and "" not in seen.pods_by_node


def test_a_pod_sro_deleted_reads_deleting_until_the_cache_shows_it_and_its_node_is_walked_again() -> None:
    """The pass after the one that deleted a succeeded per-node pod (a kernel change reset
    its node) must not read it succeeded while the pod cache lags: its state just reopened,
    and the pod would count as run for it. A pod made again under the name is its own."""
    reader, sr, memory = Reader(new_store()), special_resource(), memory_.Memory()
    done = body("check-n1", ns=NS, kind="SpecialResource", owner=SR_UID, phase="Succeeded", labelled=True)
    reader.store.upsert(done)
    first = memory.pods_seen(reader, sr, owners=frozenset())
    assert not first.pods[(NS, "check-n1")].deleting
    # The first pass's walk, remembered with where the caches stood when it read them.
    memory.walked, memory.walk_cursors = walk_memo.Memo(key=("first",)), reader.cursors()
    deleted_by_sro(memory, done)

    second = memory.pods_seen(reader, sr, owners=frozenset())
    pod = second.pods[(NS, "check-n1")]
    assert (pod.deleting, pod.phase, pod.uid) == (True, "Succeeded", done["metadata"]["uid"])
    assert second.bare[next(iter(second.bare))].deleting
    touched = memory.touched(reader)
    assert touched is not None and (NS, "check-n1") in touched.pods and "n1" in touched.pod_nodes

    again = body("check-n1", ns=NS, kind="SpecialResource", owner=SR_UID, phase="Pending", labelled=True)
    reader.store.upsert(again)  # deleted meanwhile and made again: a new uid
    third = memory.pods_seen(reader, sr, owners=frozenset())
    assert not third.pods[(NS, "check-n1")].deleting
    assert_same(third, fresh(reader, sr, frozenset()))
    assert memory.deleting == {}
