"""Node labels held as values beside a shared key layout behave as the dict they replace."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sro.model import views
from sro.model.shared_labels import SharedLabels, shared

pytestmark = pytest.mark.unit

label_maps = st.dictionaries(st.text(max_size=12), st.text(max_size=12), max_size=20)


@given(label_maps)
def test_a_shared_mapping_reads_and_compares_as_its_dict(labels: dict[str, str]) -> None:
    held = shared(labels)
    assert dict(held) == labels and list(held) == list(labels) and len(held) == len(labels)
    assert held == labels and labels == held
    for key, value in labels.items():
        assert key in held and held[key] == value and held.get(key) == value
    assert "absent-key-\x00" not in held and held.get("absent-key-\x00", "d") == "d"
    with pytest.raises(KeyError):
        held["absent-key-\x00"]
    assert held == dict(reversed(labels.items()))  # another order, the same mapping
    assert held == shared(dict(reversed(labels.items())))


@given(label_maps, st.text(max_size=12), st.text(max_size=12))
def test_a_mapping_that_differs_in_one_label_is_not_equal(
    labels: dict[str, str], key: str, value: str
) -> None:
    other = {**labels, key: value}
    assert (shared(labels) == other) == (labels == other)
    assert (shared(labels) == shared(other)) == (labels == other)
    assert (shared(labels) != other) == (labels != other) and (other != shared(labels)) == (other != labels)
    assert shared(labels) != [*labels]  # not a mapping at all


def test_nodes_with_the_same_keys_share_one_layout_and_hold_their_own_values() -> None:
    a = shared({"kubernetes.io/hostname": "n1", "feature.node.kubernetes.io/pci-10de.present": "true"})
    b = shared({"kubernetes.io/hostname": "n2", "feature.node.kubernetes.io/pci-10de.present": "true"})
    assert a._keys is b._keys and a._slots is b._slots
    assert a["kubernetes.io/hostname"] == "n1" and b["kubernetes.io/hostname"] == "n2"
    assert a != b
    # A node on to its next state carries one more key: another layout, shared in turn.
    c = shared({**dict(a), "nvidia-gpu.sro.dev/state-driver": "ready"})
    assert c._keys is not a._keys and c._keys is shared(dict(c))._keys


def test_keys_and_values_of_other_types_are_held_as_strings_and_keys_printing_alike_once() -> None:
    held = shared({1: 2, "1": "3", "a": None})
    assert dict(held) == {"1": "3", "a": "None"}
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in held.items())


def test_a_shared_mapping_is_unhashable_and_prints_as_a_dict() -> None:
    held = shared({"a": "b"})
    with pytest.raises(TypeError):
        hash(held)
    assert repr(held) == "{'a': 'b'}"
    assert isinstance(held, SharedLabels)


def test_a_node_view_holds_its_labels_shared_and_an_unlabelled_node_the_empty_mapping() -> None:
    def body(name: str, labels: dict[str, str] | None) -> dict[str, object]:
        return {"metadata": {"name": name, "resourceVersion": "1", "labels": labels}}

    one = views.NodeView.from_body(body("n1", {"zone": "a", "kubernetes.io/hostname": "n1"}))
    two = views.NodeView.from_body(body("n2", {"zone": "a", "kubernetes.io/hostname": "n2"}))
    assert isinstance(one.labels, SharedLabels) and one.labels._keys is two.labels._keys  # type: ignore[attr-defined]
    assert one.labels == {"zone": "a", "kubernetes.io/hostname": "n1"}
    assert views.NodeView.from_body(body("n3", None)).labels == {}
