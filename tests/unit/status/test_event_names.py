"""Event names (sro.status.events.name): the same Event of the same transition is always
named alike, anything else apart, and every name is a valid, bounded DNS subdomain."""

import datetime
import re

import pytest

from sro.status import events

pytestmark = pytest.mark.unit

DONE = events.Event(
    type="Normal", reason=events.STATE_COMPLETED, message="state-driver is complete on 4 nodes"
)
SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def name(event: events.Event = DONE, *, sr: str = "gpu", uid: str = "u-1", transition: str = "41") -> str:
    return events.name(event, sr_name=sr, sr_uid=uid, transition=transition)


def test_the_same_event_of_the_same_transition_gets_the_same_name() -> None:
    assert name() == name()
    assert name().startswith("gpu.")
    assert SUBDOMAIN.match(name())


@pytest.mark.parametrize(
    "other",
    [
        {"transition": "42"},
        {"uid": "u-2"},
        {"event": events.Event(type="Warning", reason=DONE.reason, message=DONE.message)},
        {"event": events.Event(type="Normal", reason=events.KERNEL_GROUP_ADDED, message=DONE.message)},
        {"event": events.Event(type="Normal", reason=DONE.reason, message=DONE.message + "!")},
    ],
)
def test_a_different_transition_object_or_event_gets_another_name(other: dict) -> None:
    assert name(**other) != name()


def test_fields_cannot_run_into_each_other() -> None:
    a = events.name(DONE, sr_name="gpu", sr_uid="u-1", transition="23")
    b = events.name(DONE, sr_name="gpu", sr_uid="u-12", transition="3")
    assert a != b


def test_a_name_stays_within_a_dns_subdomain_for_the_longest_specialresource_name() -> None:
    longest = ".".join(["a" * 63] * 3) + "." + "b" * 61  # 253 characters
    got = name(sr=longest)
    assert len(got) <= events.NAME_MAX
    assert SUBDOMAIN.match(got)


def test_the_body_carries_the_name() -> None:
    body = events.body(
        DONE,
        name=name(),
        sr_name="gpu",
        sr_uid="u-1",
        instance="sro-0",
        now=datetime.datetime(2026, 11, 25, tzinfo=datetime.UTC),
    )
    assert body["metadata"] == {"name": name(), "namespace": events.EVENTS_NAMESPACE}
    assert body["regarding"]["uid"] == "u-1"
