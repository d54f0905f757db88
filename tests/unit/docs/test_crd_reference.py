"""docs/crd-reference.md is what hack/lib/crdref.py makes of the CRD: a change to the CRD that
leaves the page behind fails here (and so in CI) until the page is written again."""

from __future__ import annotations

from pathlib import Path

import crdref
import pytest

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.unit


def test_the_checked_in_reference_is_generated_from_the_crd() -> None:
    page = (REPO / crdref.PAGE).read_text()
    assert page == crdref.generate(REPO), (
        f"{crdref.PAGE} is stale: run `python hack/lib/crdref.py` and commit the result"
    )


def test_every_spec_and_status_field_of_the_crd_has_a_row() -> None:
    page = (REPO / crdref.PAGE).read_text()
    for path in ("spec.recipe", "spec.nodeSelector", "spec.taints[].effect", "status.states[].failingNodes"):
        assert f"| `{path}` |" in page
    assert "| STATE | `.status.phase` |" in page
    assert "managementState must be one of Managed, Unmanaged, Removed" in page
