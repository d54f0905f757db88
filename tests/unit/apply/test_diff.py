"""Deciding whether an apply would change anything: absence, desired changes, drift, server defaults."""

import copy

import pytest

from sro.apply import diff

pytestmark = pytest.mark.unit

DESIRED = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "d", "namespace": "ops", "labels": {"sro.dev/owner": "gpu"}},
    "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i:1", "args": ["-v"]}]}}},
}


def live_of(desired: dict) -> dict:
    """What the server returns after applying: stamped, plus defaults and its own fields."""
    live = copy.deepcopy(diff.stamped(desired))
    live["metadata"].update(uid="u", resourceVersion="5", generation=1)
    live["metadata"]["labels"]["other"] = "x"
    container = live["spec"]["template"]["spec"]["containers"][0]
    container.update(imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log")
    live["spec"]["revisionHistoryLimit"] = 10
    live["status"] = {"numberReady": 0}
    return live


def test_an_absent_object_needs_an_apply() -> None:
    assert diff.needs_apply(DESIRED, None)


def test_an_unchanged_object_with_server_defaults_needs_no_apply() -> None:
    assert not diff.needs_apply(DESIRED, live_of(DESIRED))


def test_a_field_edited_by_someone_else_is_drift() -> None:
    live = live_of(DESIRED)
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "i:evil"
    assert diff.needs_apply(DESIRED, live)


def test_a_removed_label_is_drift() -> None:
    live = live_of(DESIRED)
    del live["metadata"]["labels"]["sro.dev/owner"]
    assert diff.needs_apply(DESIRED, live)


def test_a_list_with_an_extra_element_is_drift() -> None:
    live = live_of(DESIRED)
    live["spec"]["template"]["spec"]["containers"][0]["args"].append("-x")
    assert diff.needs_apply(DESIRED, live)


def test_a_field_no_longer_desired_needs_an_apply_to_remove_it() -> None:
    previous = copy.deepcopy(DESIRED)
    previous["spec"]["minReadySeconds"] = 5
    now = copy.deepcopy(DESIRED)
    assert diff.needs_apply(now, live_of(previous))


def test_the_hash_ignores_key_order_and_its_own_annotation() -> None:
    reordered = {k: DESIRED[k] for k in reversed(list(DESIRED))}
    assert diff.desired_hash(reordered) == diff.desired_hash(DESIRED)
    assert diff.desired_hash(diff.stamped(DESIRED)) == diff.desired_hash(DESIRED)


def test_booleans_are_not_numbers() -> None:
    assert not diff.contains({"a": 1}, {"a": True})
    assert diff.contains({"a": 1.0}, {"a": 1})


def test_a_body_already_sent_is_not_sent_again_until_the_cache_shows_that_write() -> None:
    sent = (diff.desired_hash(DESIRED), 120)
    assert diff.already_sent(DESIRED, sent=sent, cached_version=100, kind_lagging=True)
    assert diff.already_sent(DESIRED, sent=sent, cached_version=100, kind_lagging=False)
    assert diff.already_sent(DESIRED, sent=sent, cached_version=None, kind_lagging=True), (
        "not yet seen at all"
    )


def test_a_cache_that_shows_the_write_a_changed_body_or_nothing_sent_decide_as_usual() -> None:
    sent = (diff.desired_hash(DESIRED), 120)
    changed = copy.deepcopy(DESIRED)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "i:2"
    assert not diff.already_sent(DESIRED, sent=sent, cached_version=120, kind_lagging=True)
    assert not diff.already_sent(DESIRED, sent=sent, cached_version=None, kind_lagging=False), "deleted since"
    assert not diff.already_sent(changed, sent=sent, cached_version=100, kind_lagging=True)
    assert not diff.already_sent(DESIRED, sent=None, cached_version=100, kind_lagging=True)


def test_a_digest_computed_once_decides_and_stamps_as_the_body_itself_would() -> None:
    changed = copy.deepcopy(DESIRED)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "i:2"
    live = live_of(DESIRED)
    for body in (DESIRED, changed):
        digest = diff.desired_hash(body)
        assert diff.stamped(body, digest=digest) == diff.stamped(body)
        assert diff.needs_apply(body, live, digest=digest) == diff.needs_apply(body, live)
        sent = (diff.desired_hash(DESIRED), 120)
        assert diff.already_sent(body, sent=sent, cached_version=100, kind_lagging=True, digest=digest) == (
            body is DESIRED
        )
    # The digest given is the one used: a caller's digest of another body decides.
    assert diff.needs_apply(DESIRED, live, digest=diff.desired_hash(changed))
