"""sro.model.times.parse: an API server timestamp, or None for anything that names no time."""

from datetime import UTC, datetime

import pytest

from sro.model import times

pytestmark = pytest.mark.unit


def test_an_rfc3339_utc_time_is_read_aware() -> None:
    assert times.parse("2026-11-25T05:00:01Z") == datetime(2026, 11, 25, 5, 0, 1, tzinfo=UTC)


@pytest.mark.parametrize("text", ["", "yesterday", "2026-11-25T05:00:01", "2026-13-40T99:00:00Z"])
def test_empty_malformed_or_zoneless_is_no_time(text: str) -> None:
    assert times.parse(text) is None
