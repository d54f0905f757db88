"""Which status a reconcile starts from while the cache lags sro's own status writes."""

from __future__ import annotations

from typing import Any

import pytest

from sro.engine.reporting import Written, newest_status

pytestmark = pytest.mark.unit

C0 = {"state": "Progressing", "message": "driver on 2 of 4 nodes"}
C1 = {"state": "Progressing", "message": "driver on 3 of 4 nodes"}  # written, then S1 right after
S1 = {"state": "Progressing", "message": "driver complete on 4 nodes"}


def body(status: dict[str, Any], version: str) -> dict[str, Any]:
    return {"metadata": {"name": "gpu", "resourceVersion": version}, "status": status}


def test_without_a_write_the_cache_is_the_truth() -> None:
    assert newest_status(body(C0, "7"), None) == C0


def test_a_late_watch_event_of_an_earlier_write_does_not_pass_for_news() -> None:
    # C1 was written (version 11), then S1 (version 12) while the cache still showed C0;
    # the watch now brings C1: by content it differs from what the cache showed at the
    # second write, but its version says it is older than S1.
    written = Written(cached=C0, status=S1, version=12)
    assert newest_status(body(C1, "11"), written) == S1
    assert newest_status(body(C0, "10"), written) == S1


def test_once_the_cache_has_the_write_it_is_the_truth_again() -> None:
    written = Written(cached=C0, status=S1, version=12)
    assert newest_status(body(S1, "12"), written) == S1
    someone_else = {"state": "Ready", "message": "written by another writer after ours"}
    assert newest_status(body(someone_else, "15"), written) == someone_else


def test_without_numeric_versions_the_cache_lags_while_it_shows_what_it_showed() -> None:
    written = Written(cached=C0, status=S1, version=0)
    assert newest_status(body(C0, "opaque"), written) == S1
    assert newest_status(body(C1, "opaque"), written) == C1
    written_numeric = Written(cached=C0, status=S1, version=12)
    assert newest_status(body(C0, "not-a-number"), written_numeric) == S1
