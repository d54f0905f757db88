"""Owned bare pods become owned objects, and a pass reuses the last pass's object of a
pod whose cached record did not change (``inputs.pod_objects``): the same objects either
way, and a changed or replaced pod is made again from its new record."""

from __future__ import annotations

import dataclasses

import pytest

from sro.model import views
from sro.plan import inputs

pytestmark = pytest.mark.unit


def pod(name: str, *, phase: str = "Running", uid: str = "") -> views.PodView:
    return views.PodView(namespace="gpu", name=name, uid=uid or f"uid-{name}", phase=phase)


def test_a_pass_reuses_the_objects_of_unchanged_pods_and_remakes_the_others() -> None:
    a, b, c = pod("a"), pod("b"), pod("c")
    first, records = inputs.pod_objects([a, b, c])
    b2 = dataclasses.replace(b, phase="Succeeded")  # the cache's new record of b
    d = pod("d")
    second, again = inputs.pod_objects([a, b2, d], last=records)
    assert second == inputs.pod_objects([a, b2, d])[0]  # as made from scratch
    by_name = {ref.name: live for ref, live in second.items()}
    assert by_name["a"] is next(live for ref, live in first.items() if ref.name == "a")
    assert by_name["b"].phase == "Succeeded"
    assert by_name["b"] is not next(live for ref, live in first.items() if ref.name == "b")
    assert set(by_name) == {"a", "b", "d"}
    assert {p.name for p, _ in again.values()} == {"a", "b", "d"}  # c is forgotten


def test_an_equal_record_of_another_pod_is_not_taken_for_it() -> None:
    old = pod("a", uid="first")
    _, records = inputs.pod_objects([old])
    recreated = pod("a", uid="second")  # deleted and made again under the same name
    made, _ = inputs.pod_objects([recreated], last=records)
    (live,) = made.values()
    assert live.uid == "second"
