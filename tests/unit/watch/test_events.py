"""Parsing watch stream lines, and the reflector's backoff schedule (pure parts of sro.watch)."""

import random

import pytest

from sro.queue import clock
from sro.watch import backoff, events

pytestmark = pytest.mark.unit


def test_an_added_event_is_parsed_with_its_resource_version() -> None:
    ev = events.parse(b'{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"7"}}}\n')
    assert ev is not None and ev.type is events.EventType.ADDED and ev.resource_version == "7"


def test_a_bookmark_carries_only_a_resource_version() -> None:
    ev = events.parse('{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"99"}}}')
    assert ev is not None and ev.type is events.EventType.BOOKMARK and ev.resource_version == "99"


def test_an_error_event_keeps_its_status() -> None:
    ev = events.parse(b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}')
    assert ev is not None and ev.type is events.EventType.ERROR and ev.object["code"] == 410


@pytest.mark.parametrize("value", [2**63 - 1, -(2**63), 2**64 - 1, 10**18])
def test_an_int64_stream_keeps_every_64_bit_integer_whole(value: int) -> None:
    # A Node's or Pod's integers are 64 bits wide at most (SCHEMA_GROUPS): the fast path
    # skips the scan for long digit runs and must still read each exactly, not as a float.
    line = f'{{"type":"MODIFIED","object":{{"metadata":{{"labels":{{"id":"{value}"}}}},"n":{value}}}}}'
    ev = events.parse(line.encode(), int64=True)
    assert ev is not None and ev.object["n"] == value and type(ev.object["n"]) is int
    assert ev.object["metadata"]["labels"]["id"] == str(value)


def test_only_groups_the_api_server_types_itself_skip_the_wide_integer_scan() -> None:
    assert {"", "apps"} <= events.SCHEMA_GROUPS
    assert not any("." in group for group in events.SCHEMA_GROUPS)  # no custom resource's group


def test_a_blank_line_is_a_keepalive() -> None:
    assert events.parse(b"\n") is None


@pytest.mark.parametrize("line", [b"{not json", b'{"type":"ADDED"}', b'{"type":"WHAT","object":{}}', b"[1]"])
def test_a_line_that_is_not_an_event_is_malformed(line: bytes) -> None:
    with pytest.raises(events.MalformedEvent):
        events.parse(line)


def test_backoff_doubles_from_0_8_to_30_seconds() -> None:
    b = backoff.Backoff(jitter=0, clock=clock.ManualClock())
    assert [round(b.next(), 3) for _ in range(8)] == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]


def test_backoff_jitter_stays_within_one_delay() -> None:
    b = backoff.Backoff(clock=clock.ManualClock(), rng=random.Random(1))
    first = b.next()
    assert 0.8 <= first <= 1.6


def test_backoff_starts_over_after_two_healthy_minutes() -> None:
    c = clock.ManualClock()
    b = backoff.Backoff(jitter=0, clock=c)
    b.next()
    b.next()
    c.advance(121)
    b.healthy()
    assert b.next() == 0.8


def test_backoff_keeps_growing_while_failures_are_close_together() -> None:
    c = clock.ManualClock()
    b = backoff.Backoff(jitter=0, clock=c)
    b.next()
    c.advance(10)
    b.healthy()
    assert b.next() == 1.6
