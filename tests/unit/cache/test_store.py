"""The indexed store: upserts, deletions, relists that report vanished objects, indexes, misses.

Pure; bodies are plain dicts as the API server sends them.
"""

import pytest

from sro import errors
from sro.cache import indexes, projections, store
from sro.model import views

pytestmark = pytest.mark.unit


def pod(name: str, node: str, *, rv: str = "1", owner: str = "gpu", ns: str = "ops") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "resourceVersion": rv,
            "labels": {"sro.dev/owner": owner},
        },
        "spec": {"nodeName": node},
    }


def pods() -> store.Store[views.PodView]:
    return store.Store(resource="pods", project=projections.pod, indexers=indexes.for_kind("v1", "Pod"))


def test_an_upsert_reports_creation_then_change() -> None:
    s = pods()
    first = s.upsert(pod("a", "n1"))
    assert first is not None and first.old is None and first.new is not None and first.new.node == "n1"
    second = s.upsert(pod("a", "n2", rv="2"))
    assert second is not None and second.old is not None and second.old.node == "n1"
    assert s.get("a", namespace="ops").node == "n2"


def test_an_upsert_of_a_version_already_stored_reports_nothing() -> None:
    s = pods()
    s.upsert(pod("a", "n1"))
    assert s.upsert(pod("a", "n1")) is None


def test_a_relist_reports_objects_that_vanished_as_deletions() -> None:
    s = pods()
    s.replace([pod("a", "n1"), pod("b", "n1")], "10")
    changes = s.replace([pod("b", "n1"), pod("c", "n2")], "20")
    deleted = [c.old.name for c in changes if c.new is None and c.old is not None]
    added = [c.new.name for c in changes if c.old is None and c.new is not None]
    assert deleted == ["a"] and added == ["c"]
    assert s.keys() == {("ops", "b"), ("ops", "c")}
    assert s.synced and s.resource_version == "20"


def test_indexes_follow_changes_and_deletions() -> None:
    s = pods()
    s.upsert(pod("a", "n1"))
    s.upsert(pod("b", "n1", owner="nic"))
    assert [p.name for p in s.by_index(indexes.BY_NODE, "n1")] == ["a", "b"]
    s.upsert(pod("a", "n2", rv="2"))
    assert [p.name for p in s.by_index(indexes.BY_NODE, "n1")] == ["b"]
    s.delete(pod("b", "n1"))
    assert s.by_index(indexes.BY_NODE, "n1") == []
    assert s.index_values(indexes.BY_OWNER) == ["gpu"]


def test_a_miss_raises_the_same_not_found_as_the_api() -> None:
    s = pods()
    with pytest.raises(errors.NotFound):
        s.get("nope", namespace="ops")
    assert s.find("nope", namespace="ops") is None


def test_deleting_an_unknown_object_reports_nothing() -> None:
    assert pods().delete(pod("a", "n1")) is None


def test_the_generic_projection_drops_managed_fields_and_reads_the_owner() -> None:
    body = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "d",
            "namespace": "ops",
            "generation": 3,
            "labels": {"sro.dev/owner": "gpu"},
            "managedFields": [{"manager": "sro"}],
        },
        "status": {"observedGeneration": 2, "numberReady": 1},
    }
    view = projections.ObjectView.from_body(body)
    assert view.owner == "gpu" and view.generation == 3 and view.observed_generation == 2
    assert "managedFields" not in view.body["metadata"]
    assert view.status["numberReady"] == 1
    assert "managedFields" in body["metadata"], "the input body must not be mutated"


def test_nodes_are_cached_as_node_views() -> None:
    s: store.Store[views.NodeView] = store.Store(resource="nodes", project=projections.for_kind("v1", "Node"))
    s.upsert({"metadata": {"name": "n1", "labels": {"a": "b"}, "resourceVersion": "1"}})
    assert s.get("n1").labels == {"a": "b"}


def test_a_paged_relist_projects_each_page_and_changes_the_store_only_at_commit() -> None:
    s = pods()
    s.replace([pod("a", "n1"), pod("b", "n1")], "10")
    seen: list[str] = []

    def project(body: dict) -> views.PodView:
        seen.append(body["metadata"]["name"])
        return projections.pod(body)

    s._project = project
    fresh = s.relist()
    assert fresh.add([pod("b", "n1"), pod("c", "n2")]) == 2
    assert seen == ["c"], "an object whose version the store holds is not projected again"
    assert fresh.add([pod("d", "n2", rv="5")]) == 1
    assert seen == ["c", "d"]
    assert s.keys() == {("ops", "a"), ("ops", "b")}, "the store reads as before until commit"
    assert s.resource_version == "10"
    changes = fresh.commit("20")
    assert [(c.old.name if c.old else None, c.new.name if c.new else None) for c in changes] == [
        (None, "c"),
        (None, "d"),
        ("a", None),
    ]
    assert s.keys() == {("ops", "b"), ("ops", "c"), ("ops", "d")}
    assert [p.name for p in s.by_index(indexes.BY_NODE, "n2")] == ["c", "d"]
    assert s.by_index(indexes.BY_NODE, "n1")[0].name == "b"
    assert s.resource_version == "20" and s.synced
    with pytest.raises(RuntimeError):
        fresh.commit("30")


def test_a_relist_reports_a_changed_version_as_a_change() -> None:
    s = pods()
    s.replace([pod("a", "n1")], "10")
    fresh = s.relist()
    fresh.add([pod("a", "n2", rv="2")])
    (change,) = fresh.commit("20")
    assert change.old is not None and change.old.node == "n1"
    assert change.new is not None and change.new.node == "n2"
    assert s.by_index(indexes.BY_NODE, "n1") == []


def finishing_pods() -> store.Store[views.PodView]:
    return store.Store(
        resource="pods", project=projections.pod, keep_gone=projections.kept_when_gone("v1", "Pod")
    )


def succeeded(name: str, *, rv: str = "2") -> dict:
    body = pod(name, "n1", rv=rv)
    body["status"] = {"phase": "Succeeded"}
    return body


def test_pods_deleted_after_they_succeeded_are_logged_from_the_cursor_on() -> None:
    s = finishing_pods()
    cursor, gone = s.gone_since(None)
    assert gone == []
    s.upsert(succeeded("a"))
    s.upsert(pod("b", "n1"))  # deleted before it finished: no proof of anything
    s.delete(succeeded("a"))
    s.delete(pod("b", "n1"))
    after, gone = s.gone_since(cursor)
    assert [p.name for p in gone] == ["a"] and gone[0].phase == "Succeeded"
    assert s.gone_since(after) == (after, [])
    s.upsert(succeeded("c"))
    s.replace([], "30")  # a relist that finds it gone logs it too
    assert [p.name for p in s.gone_since(after)[1]] == ["c"]
    assert [p.name for p in s.gone_since(cursor)[1]] == ["a", "c"]


def test_the_log_of_pods_gone_keeps_only_the_latest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "GONE_KEPT", 3)
    s = finishing_pods()
    cursor, _ = s.gone_since(None)
    for i in range(5):
        s.upsert(succeeded(f"p{i}"))
        s.delete(succeeded(f"p{i}"))
    assert [p.name for p in s.gone_since(cursor)[1]] == ["p2", "p3", "p4"]


def test_other_kinds_log_nothing_when_gone() -> None:
    assert projections.kept_when_gone("v1", "ConfigMap") is None
    s = pods()
    s.upsert(succeeded("a"))
    s.delete(succeeded("a"))
    assert s.gone_since(0) == (0, [])


def journaled() -> store.Store[views.PodView]:
    return store.Store(
        resource="pods",
        project=projections.pod,
        indexers=indexes.for_kind("v1", "Pod"),
        journal_index=indexes.journal_for("v1", "Pod"),
    )


def test_the_journal_names_every_key_changed_since_a_cursor_with_the_nodes_before_and_after() -> None:
    s = journaled()
    s.upsert(pod("a", "n1"))
    s.upsert(pod("b", "n2"))
    cursor = s.cursor
    assert s.changed_since(cursor) == store.Since(keys=frozenset(), values=frozenset())
    s.upsert(pod("a", "n3", rv="2"))  # recreated on another node
    s.upsert(pod("b", "n2"))  # the same version again: no change
    s.delete(pod("b", "n2"))
    s.upsert(pod("c", ""))  # not scheduled yet: no node
    since = s.changed_since(cursor)
    assert since is not None
    assert since.keys == {("ops", "a"), ("ops", "b"), ("ops", "c")}
    assert since.values == {"n1", "n3", "n2"}
    later = s.cursor
    s.replace([pod("a", "n3", rv="2"), pod("d", "n4")], "9")  # a relist: c gone, d new
    assert s.changed_since(later) == store.Since(
        keys=frozenset({("ops", "c"), ("ops", "d")}), values=frozenset({"n4"})
    )


def test_the_journal_says_it_does_not_know_for_no_cursor_another_stores_or_one_too_old() -> None:
    s, other = journaled(), journaled()
    start = s.cursor
    assert s.changed_since(None) is None
    assert s.changed_since(other.cursor) is None  # never read against another store
    for i in range(store.JOURNAL_KEPT):
        s.upsert(pod(f"p{i}", "n1"))
    assert s.changed_since(start) is not None  # exactly the journal's length back
    s.upsert(pod("one-more", "n1"))
    assert s.changed_since(start) is None
    assert s.changed_since((s.cursor[0], s.cursor[1] + 1)) is None  # ahead of the store


def test_the_journal_refers_to_the_stored_key_instead_of_one_decoded_per_event() -> None:
    # Every watch event decodes its own, equal key; tens of thousands of journal entries
    # each holding one would outweigh the objects they name.
    s = journaled()
    name = "validation-" + "x" * 200
    for rv in range(1, 101):
        s.upsert(pod(name, "n1", rv=str(rv)))
    s.delete(pod(name, "n1", rv="101"))
    assert len({id(key) for key in s._journal_keys}) == 1
    assert len({id(touched) for touched in s._journal_touched}) == 1  # ("n1",) each time
    assert s._keys == {}  # a deleted object's key is not kept for it
    s.replace([pod("a", "n1")], "5")
    s.replace([], "6")
    assert s._keys == {} and len(s) == 0


def test_a_store_without_a_journal_index_journals_keys_only() -> None:
    s = store.Store(resource="nodes", project=projections.node, indexers={})
    cursor = s.cursor
    s.upsert({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "resourceVersion": "1"}})
    assert s.changed_since(cursor) == store.Since(keys=frozenset({("", "n1")}), values=frozenset())


def node(name: str, labels: dict, *, rv: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "resourceVersion": rv, "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": rv}]},
    }


def nodes() -> store.Store[views.NodeView]:
    return store.Store(
        resource="nodes",
        project=projections.node,
        project_again=projections.again_for_kind("v1", "Node"),
    )


def test_a_heartbeat_keeps_the_stored_nodes_labels_and_a_relabel_replaces_them() -> None:
    s = nodes()
    labels = {f"feature.node.kubernetes.io/cpu-cpuid.F{i}": "true" for i in range(90)}
    first = s.upsert(node("n1", labels, rv="1"))
    beat = s.upsert(node("n1", dict(labels), rv="2"))  # equal labels, a new dict: as decoded
    assert first is not None and first.new is not None and beat is not None and beat.new is not None
    assert beat.new.labels is first.new.labels  # taken again, not interned again
    assert beat.new.resource_version == "2"
    relabelled = s.upsert(node("n1", {**labels, "gpu": "yes"}, rv="3"))
    assert relabelled is not None and relabelled.new is not None
    assert relabelled.new.labels is not first.new.labels
    assert dict(relabelled.new.labels) == {**labels, "gpu": "yes"}
    # A relist projects against the stored view the same way.
    fresh = s.relist()
    fresh.add([node("n1", {**labels, "gpu": "yes"}, rv="4")])
    (change,) = fresh.commit("4")
    assert change.new is not None and change.new.labels is relabelled.new.labels


def test_a_label_the_body_holds_as_another_type_is_projected_again_as_a_string() -> None:
    s = nodes()
    s.upsert(node("n1", {"count": "1"}, rv="1"))
    change = s.upsert(node("n1", {"count": 1}, rv="2"))  # not what the API server sends; still read right
    assert change is not None and change.new is not None and change.new.labels == {"count": "1"}
    emptied = s.upsert(node("n1", {}, rv="3"))
    assert emptied is not None and emptied.new is not None and dict(emptied.new.labels) == {}
    again = s.upsert({**node("n1", {}, rv="4"), "metadata": {"name": "n1", "resourceVersion": "4"}})
    assert again is not None and again.new is not None and dict(again.new.labels) == {}


def test_kinds_other_than_node_have_no_second_projection() -> None:
    assert projections.again_for_kind("v1", "Pod") is None
    assert projections.again_for_kind("apps/v1", "DaemonSet") is None
