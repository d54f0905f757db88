"""Which SpecialResources a Node change wakes (``sro.app._NodeKeys``), and that each
SpecialResource is parsed once per cached version, not once per Node event.

Pure: a real cache store of SpecialResource bodies stands in for the manager's caches.
"""

from __future__ import annotations

from typing import Any

import pytest

from sro import app
from sro.cache import projections, store
from sro.model import specialresource as sr_model
from sro.model import views

pytestmark = pytest.mark.unit


def sr(name: str, selector: dict[str, str], *, rv: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": sr_model.API_VERSION,
        "kind": sr_model.KIND,
        "metadata": {"name": name, "resourceVersion": rv, "uid": f"uid-{name}"},
        "spec": {"recipe": "nvidia-gpu", "nodeSelector": selector},
    }


class _Caches:
    """The one thing ``_NodeKeys`` asks of the manager: the SpecialResources' store."""

    def __init__(self) -> None:
        self.srs: store.Store[projections.ObjectView] = store.Store(
            resource="specialresources", project=projections.ObjectView.from_body
        )

    def store(self, api_version: str, kind: str) -> store.Store[projections.ObjectView]:
        assert (api_version, kind) == app.PRIMARY
        return self.srs


def node(name: str, **labels: str) -> views.NodeView:
    return views.NodeView(name=name, labels=labels)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names ``sr_model.parse`` was asked to parse, in order."""
    seen: list[str] = []
    real = sr_model.parse

    def counted(body: Any, **kwargs: Any) -> sr_model.SpecialResource:
        seen.append(body["metadata"]["name"])
        return real(body, **kwargs)

    monkeypatch.setattr(sr_model, "parse", counted)
    return seen


def keys_of(mapper: Any, old: views.NodeView | None, new: views.NodeView | None) -> set[str]:
    return {str(k) for k in mapper(old, new)}


def test_a_node_wakes_the_specialresources_it_matches_or_carries_marks_of() -> None:
    caches = _Caches()
    caches.srs.upsert(sr("gpu", {"gpu": "yes"}))
    caches.srs.upsert(sr("fpga", {"fpga": "yes"}))
    mapper = app._NodeKeys(caches, library=None)  # type: ignore[arg-type]
    assert keys_of(mapper, None, node("n1", gpu="yes")) == {"gpu"}
    assert keys_of(mapper, node("n1", gpu="yes"), node("n1")) == {"gpu"}  # lost the label: old matched
    assert keys_of(mapper, None, node("n2", **{"fpga.sro.dev/complete": "true"})) == {"fpga"}
    assert keys_of(mapper, None, node("n3", other="x")) == set()


def test_each_specialresource_is_parsed_once_per_version(parses: list[str]) -> None:
    caches = _Caches()
    caches.srs.upsert(sr("gpu", {"gpu": "yes"}))
    mapper = app._NodeKeys(caches, library=None)  # type: ignore[arg-type]
    for i in range(50):
        assert keys_of(mapper, None, node(f"n{i}", gpu="yes")) == {"gpu"}
    assert parses == ["gpu"]
    # A new version (its selector changed) is parsed again, and its new selector holds.
    caches.srs.upsert(sr("gpu", {"accel": "yes"}, rv="2"))
    assert keys_of(mapper, None, node("n1", gpu="yes")) == set()
    assert keys_of(mapper, None, node("n1", accel="yes")) == {"gpu"}
    assert parses == ["gpu", "gpu"]


def test_a_deleted_specialresource_is_forgotten_and_an_invalid_one_wakes_nothing(
    parses: list[str],
) -> None:
    caches = _Caches()
    caches.srs.upsert(sr("gpu", {"gpu": "yes"}))
    bad = sr("broken", {"gpu": "yes"})
    bad["spec"]["managementState"] = "Sideways"
    caches.srs.upsert(bad)
    mapper = app._NodeKeys(caches, library=None)  # type: ignore[arg-type]
    assert keys_of(mapper, None, node("n1", gpu="yes")) == {"gpu"}
    assert keys_of(mapper, None, node("n2", gpu="yes")) == {"gpu"}
    assert sorted(parses) == ["broken", "gpu"]  # the invalid one is not parsed again either
    caches.srs.delete(sr("gpu", {"gpu": "yes"}, rv="3"))
    assert keys_of(mapper, None, node("n1", gpu="yes")) == set()
    assert set(mapper._parsed) == {"broken"}
