"""Decoding JSON anyone may have written (``sro.watch.decode``) and watch lines built on it.

Covers: ordinary JSON decodes as ``json.loads`` does; JSON nested past Python's recursion
limit decodes, with everything deeper than ``MAX_DEPTH`` cut to the marker, instead of
raising ``RecursionError``; a watch line carrying such an object is an event whose
metadata survives; text that is not JSON is still a ``ValueError``.
"""

from __future__ import annotations

import json
import sys
import tracemalloc

import pytest

from sro.model import bodies
from sro.watch import decode, events

pytestmark = pytest.mark.unit


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def test_ordinary_json_decodes_unchanged() -> None:
    doc = {"metadata": {"name": "x"}, "spec": {"set": {"a": [1, {"b": 2}]}}}
    assert decode.loads(json.dumps(doc)) == doc


def test_json_deeper_than_the_recursion_limit_is_cut_not_raised() -> None:
    depth = sys.getrecursionlimit() + 100
    with pytest.raises(RecursionError):
        json.loads(nested(depth))
    value = decode.loads(nested(depth))
    levels, item = 0, value
    while isinstance(item, dict):
        item, levels = item["a"], levels + 1
    assert item == decode.TOO_DEEP and levels == decode.MAX_DEPTH


def test_a_watch_line_with_a_deep_object_keeps_its_identity() -> None:
    obj = '{"metadata":{"name":"deep","resourceVersion":"42"},"spec":{"set":' + nested(3000) + "}}"
    event = events.parse('{"type":"ADDED","object":' + obj + "}")
    assert event is not None and event.object["metadata"]["name"] == "deep"
    assert event.resource_version == "42"


def test_text_that_is_not_json_is_still_a_value_error() -> None:
    with pytest.raises(ValueError):
        decode.loads("<html>bad gateway</html>")
    with pytest.raises(events.MalformedEvent):
        events.parse("<html>")


def test_cut_works_in_place_at_any_depth() -> None:
    value = json.loads(nested(10))
    decode.cut(value, limit=3)
    assert value == {"a": {"a": {"a": decode.TOO_DEEP}}}


@pytest.mark.parametrize(
    "text",
    [
        '{"a": NaN, "b": Infinity}',  # the standard decoder's extensions
        '{"s": "\\ud800 alone"}',  # a lone surrogate escape
        '{"n": 123456789012345678901234567890, "m": -9223372036854775809}',  # past 64 bits
        '{"n": 18446744073709551616, "uid": "12345678901234567890"}',
        '{"k": 1, "k": 2}',  # a duplicate key: the last wins
        '{"x": 1.5e300, "y": -0.0, "z": "\\u00e9\\n"}',
    ],
)
def test_the_fast_path_and_the_standard_decoder_agree(text: str) -> None:
    expected = json.loads(text)
    assert decode.loads(text) == expected
    assert decode.loads(text.encode()) == expected


def test_invalid_utf8_and_truncated_text_are_value_errors() -> None:
    for data in (b'{"a": "\xff"}', b'{"a": [1, 2', b""):
        with pytest.raises(ValueError):
            decode.loads(data)


def test_a_list_page_decodes_without_a_transient_of_many_times_its_size() -> None:
    # orjson's parse briefly takes about thirteen times its input; a 5,000-node list page
    # is megabytes, so pages take the standard decoder (about twice).
    value = "x" * (32 * 1024)
    items = [
        {"metadata": {"name": f"big{i:03d}", "resourceVersion": str(i)}, "data": {"v": value}}
        for i in range(10)
    ]
    page = json.dumps({"kind": "ConfigMapList", "items": items}).encode()
    assert len(page) > decode.FAST_MAX
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        decoded = decode.loads(page)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decoded["items"][9]["metadata"]["name"] == "big009"
    assert peak - base < 3 * len(page)


def test_a_typed_decode_keeps_the_fields_its_type_names_and_nothing_else() -> None:
    typed = decode.Typed(bodies.ObjectBody)
    answer = {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {
            "name": "n1",
            "resourceVersion": "41",
            "labels": {"a": "b"},
            "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
        },
    }
    assert typed(json.dumps(answer).encode()) == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"name": "n1", "resourceVersion": "41", "labels": {"a": "b"}},
    }


@pytest.mark.parametrize(
    "text",
    [
        '{"metadata": {"labels": {"a": 1}}}',  # a field of another type than the type says
        '{"metadata": "none"}',
        "[1, 2]",
        nested(5_000),  # past msgspec's own nesting limit: cut as loads cuts it
    ],
)
def test_text_that_does_not_fit_the_type_is_decoded_whole(text: str) -> None:
    assert decode.Typed(bodies.ObjectBody)(text.encode()) == decode.loads(text)


def test_text_that_is_not_json_is_a_value_error_with_a_type_too() -> None:
    with pytest.raises(ValueError):
        decode.Typed(bodies.ObjectBody)(b"<html>proxy error</html>")
