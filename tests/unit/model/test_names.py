"""Kubernetes name and label syntax, and bounded unique suffixes (sro.model.names).

Property tests: a suffixed name is always a valid DNS label of at most 63 characters,
and different identities never share one.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sro.model import names

pytestmark = pytest.mark.unit

texts = st.text(alphabet=st.characters(codec="ascii"), max_size=120)


@given(base=texts, readable=texts, identities=st.sets(st.text(max_size=40), min_size=1, max_size=20))
def test_suffixed_names_are_valid_bounded_labels_unique_per_identity(
    base: str, readable: str, identities: set[str]
) -> None:
    made = {names.suffixed(base, readable, identity=i) for i in identities}
    assert len(made) == len(identities)
    assert all(names.is_dns_label(m) and len(m) <= 63 for m in made)


@given(base=texts, readable=texts, limit=st.integers(min_value=12, max_value=253))
def test_suffixed_names_respect_a_smaller_limit(base: str, readable: str, limit: int) -> None:
    assert len(names.suffixed(base, readable, identity="x", limit=limit)) <= limit


def test_a_suffix_is_readable_when_there_is_room() -> None:
    made = names.suffixed("nvidia-driver", "5.14.0-427.13.1.el9_4.x86_64", identity="k")
    assert made.startswith("nvidia-driver-5-14-0-427-13-1-el9-4-x86-64-")


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("feature.node.kubernetes.io/pci-10de.present", True),
        ("app", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("bad key", False),
        ("Upper.Case/x", False),
        ("/x", False),
        ("x/", False),
    ],
)
def test_label_keys_are_checked_like_the_api_server(key: str, ok: bool) -> None:
    assert (names.label_key_problem(key) is None) is ok


@pytest.mark.parametrize(
    ("value", "ok"), [("", True), ("5.14.0-427.el9_4.x86_64", True), ("-x", False), ("a b", False)]
)
def test_label_values_are_checked_like_the_api_server(value: str, ok: bool) -> None:
    assert (names.label_value_problem(value) is None) is ok
