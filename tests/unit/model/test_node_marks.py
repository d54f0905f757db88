"""A node's labels of one SpecialResource (``NodeView.labels_of``), found among the few
keys any SpecialResource may have set (``NodeView.marked``)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sro.model import specialresource as sr_model
from sro.model import views
from sro.plan import lifecycle

pytestmark = pytest.mark.unit

NFD = {f"feature.node.kubernetes.io/cpu-cpuid.X{i}": "true" for i in range(90)}


def test_a_specialresources_labels_are_found_among_the_marked_keys_only() -> None:
    labels = {
        **NFD,
        "gpu.sro.dev/state-driver": "ready",
        "nic.sro.dev/state-driver": "ready",
        "sro.dev/x": "1",
    }
    node = views.NodeView(name="n1", labels=labels)
    assert set(node.marked) == {"gpu.sro.dev/state-driver", "nic.sro.dev/state-driver"}
    assert node.labels_of(lifecycle.label_prefix("gpu")) == ["gpu.sro.dev/state-driver"]
    assert node.labels_of(lifecycle.label_prefix("fpga")) == []
    # any other prefix reads every label
    assert len(node.labels_of("feature.node.kubernetes.io/")) == 90
    assert node.labels_of("sro.dev/") == ["sro.dev/x"]


def test_the_marked_keys_follow_the_labels_through_replace_and_parsing() -> None:
    node = views.NodeView(name="n1", labels=NFD)
    assert node.marked == ()
    labelled = dataclasses.replace(node, labels={**NFD, "gpu.sro.dev/complete": "ready"})
    assert labelled.marked == ("gpu.sro.dev/complete",)
    parsed = views.NodeView.from_body(
        {"metadata": {"name": "n1", "labels": {**NFD, "gpu.sro.dev/complete": "ready"}}}, previous=node
    )
    assert parsed.marked == ("gpu.sro.dev/complete",)
    again = views.NodeView.from_body(
        {"metadata": {"name": "n1", "labels": dict(parsed.labels)}}, previous=parsed
    )
    assert again.labels is parsed.labels and again.marked == parsed.marked
    assert again == parsed  # derived: not compared


def test_the_label_domain_is_the_api_group() -> None:
    assert f".{sr_model.GROUP}/" == views.SR_LABEL_DOMAIN
    assert lifecycle.label_prefix("gpu").endswith(views.SR_LABEL_DOMAIN)


keys = st.text(alphabet="abc./-", min_size=1, max_size=14)


@given(labels=st.dictionaries(keys, st.just("v"), max_size=20), name=st.text(alphabet="abc.-", max_size=5))
def test_labels_of_is_the_same_as_reading_every_label(labels: dict[str, str], name: str) -> None:
    node = views.NodeView(name="n", labels=labels)
    for prefix in (lifecycle.label_prefix(name), name, f"{name}/", ""):
        assert sorted(node.labels_of(prefix)) == sorted(k for k in labels if k.startswith(prefix))
