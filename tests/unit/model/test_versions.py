"""resourceVersions compared as numbers, and what is never compared."""

import pytest

from sro.model import bodies

pytestmark = pytest.mark.unit


def test_a_resource_version_is_the_number_it_is_and_anything_else_is_zero() -> None:
    assert bodies.version_number("3280") == 3280
    assert bodies.version_of({"metadata": {"resourceVersion": "12"}}) == 12
    for unusable in ("", None, "opaque", "12a"):
        assert bodies.version_number(unusable) == 0
    assert bodies.version_of({}) == 0
    assert bodies.version_of({"metadata": None}) == 0
