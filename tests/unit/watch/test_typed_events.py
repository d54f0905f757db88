"""A watch of Nodes or Pods decodes only the fields the cache keeps (``events.Parser`` with
a ``sro.model.bodies`` type): the views it yields must be the views of the whole object.

The bodies in ``data/`` are a Node and a driver Pod as the API server sent them (managedFields
included); the properties vary every field a view reads, beside fields it does not."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sro.model import bodies, views
from sro.watch import decode, events

pytestmark = pytest.mark.unit

DATA = Path(__file__).parent / "data"
POD: dict[str, Any] = json.loads((DATA / "pod.json").read_text())
NODE: dict[str, Any] = json.loads((DATA / "node.json").read_text())
PODS = events.Parser(body=bodies.PodBody, int64=True)
NODES = events.Parser(body=bodies.NodeBody, int64=True)


def line(obj: Any, kind: str = "MODIFIED") -> bytes:
    return orjson.dumps({"type": kind, "object": obj})


def both(
    parser: events.Parser, obj: Any, kind: str = "MODIFIED"
) -> tuple[events.WatchEvent, events.WatchEvent]:
    """The event as ``parser`` reads it and as the whole line parses."""
    typed, whole = parser(line(obj, kind)), events.parse(line(obj, kind), int64=True)
    assert typed is not None and whole is not None
    return typed, whole


def test_a_pod_event_keeps_only_what_the_view_reads_and_gives_the_same_view() -> None:
    typed, whole = both(PODS, POD)
    assert "managedFields" not in typed.object["metadata"] and "managedFields" in whole.object["metadata"]
    assert "containers" not in typed.object["spec"]
    assert typed.resource_version == whole.resource_version == POD["metadata"]["resourceVersion"]
    assert views.PodView.from_body(typed.object) == views.PodView.from_body(whole.object)
    assert len(orjson.dumps(typed.object)) < len(orjson.dumps(whole.object)) / 3


def test_a_node_event_gives_the_same_view_and_labels_as_the_whole_node() -> None:
    typed, whole = both(NODES, NODE)
    assert "images" not in typed.object["status"] and "managedFields" not in typed.object["metadata"]
    view = views.NodeView.from_body(typed.object)
    assert view == views.NodeView.from_body(whole.object)
    assert dict(view.labels) == NODE["metadata"]["labels"] and view.kernel_version


@pytest.mark.parametrize("kind", ["ADDED", "MODIFIED", "DELETED"])
def test_every_object_event_type_is_read_typed(kind: str) -> None:
    typed, whole = both(PODS, POD, kind)
    assert typed.type is whole.type is events.EventType(kind)


def test_a_bookmark_carries_its_resource_version() -> None:
    ev = PODS(
        b'{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"99"}}}'
    )
    assert ev is not None and ev.type is events.EventType.BOOKMARK and ev.resource_version == "99"


def test_an_error_event_keeps_its_whole_status() -> None:
    ev = PODS(
        b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"code":410,"reason":"Expired"}}'
    )
    assert ev is not None and ev.type is events.EventType.ERROR
    assert ev.object["code"] == 410 and ev.object["reason"] == "Expired"


def test_a_keepalive_and_a_broken_line_are_what_parse_says() -> None:
    assert PODS(b"\n") is None
    for bad in (
        b"{not json",
        b'{"type":"ADDED"}',
        b'{"type":"WHAT","object":{}}',
        b'{"type":"ADDED","object":null}',
    ):
        with pytest.raises(events.MalformedEvent):
            PODS(bad)


@pytest.mark.parametrize(
    "path, value",
    [
        (("status", "containerStatuses", 0, "ready"), "yes"),  # a bool the type says, a string here
        (("metadata", "labels"), {"app": 7}),
        (("status", "phase"), ["Running"]),
        (("metadata", "resourceVersion"), 12),
    ],
)
def test_a_field_of_another_type_is_read_from_the_whole_object(path: tuple[Any, ...], value: Any) -> None:
    # Not what the API server sends for a Pod; if it were, the object is read as before.
    pod = copy.deepcopy(POD)
    target: Any = pod
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    typed, whole = both(PODS, pod)
    assert typed.object == whole.object


def test_a_field_nested_past_msgspecs_limit_falls_back_to_the_cutting_decoder() -> None:
    pod = copy.deepcopy(POD)
    pod["spec"]["junk"] = "@deep@"
    deep = line(pod).replace(b'"@deep@"', b"[" * 5_000 + b'"bottom"' + b"]" * 5_000)
    typed = PODS(deep)
    assert typed is not None and typed.type is events.EventType.MODIFIED
    assert views.PodView.from_body(typed.object) == views.PodView.from_body(POD)
    assert decode.TOO_DEEP in str(typed.object["spec"]["junk"])


def test_without_a_body_type_the_parser_is_parse() -> None:
    ev = events.Parser()(line(POD))
    assert ev is not None and ev.object == POD


def _listed(items: list[Any], **meta: Any) -> bytes:
    return orjson.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": items})


def test_a_list_page_keeps_its_continue_token_and_the_views_of_its_items() -> None:
    other = copy.deepcopy(POD)
    other["metadata"]["name"] = "other"
    answer = _listed([POD, other], resourceVersion="812", remainingItemCount=7, **{"continue": "tok"})
    page = PODS.page(answer)
    assert page["metadata"] == {"resourceVersion": "812", "continue": "tok"}
    assert [views.PodView.from_body(i) for i in page["items"]] == [
        views.PodView.from_body(i) for i in (POD, other)
    ]
    assert all("managedFields" not in i["metadata"] for i in page["items"])


def test_the_last_list_page_has_no_continue_token() -> None:
    page = NODES.page(_listed([NODE], resourceVersion="9"))
    assert page["metadata"] == {"resourceVersion": "9"} and len(page["items"]) == 1


@pytest.mark.parametrize(
    "answer",
    [
        _listed([{**POD, "status": "not a status"}], resourceVersion="3"),  # an item of another shape
        orjson.dumps({"kind": "Status", "code": 500}),  # no items at all
        b"[1, 2]",
    ],
)
def test_a_page_that_does_not_fit_is_read_whole(answer: bytes) -> None:
    assert PODS.page(answer) == decode.loads(answer)


def test_without_a_body_type_a_page_is_read_whole() -> None:
    answer = _listed([POD], resourceVersion="3")
    assert events.Parser().page(answer) == decode.loads(answer)


# Properties: each field a view reads, varied around the real bodies, with fields it does not
# read beside them.

_text = st.text(max_size=12)
_junk = st.dictionaries(
    st.sampled_from(["image", "imageID", "restartCount", "x-extra", "started"]),
    st.integers(-(2**63), 2**63 - 1) | _text,
)
_waiting = st.fixed_dictionaries({}, optional={"reason": _text, "message": _text})
# exitCode is the one field of a terminated state the API server always writes (0 included):
# a terminated state is never empty, whatever fields of it the view reads.
_terminated = st.fixed_dictionaries(
    {"exitCode": st.integers(-(2**31), 2**31 - 1)},
    optional={"reason": _text, "message": _text, "startedAt": _text},
)
_state = st.fixed_dictionaries(
    {}, optional={"waiting": _waiting, "terminated": _terminated, "running": st.just({"startedAt": "t"})}
)
_container = st.fixed_dictionaries(
    {"name": _text}, optional={"ready": st.booleans(), "state": _state, "lastState": _state}
).flatmap(lambda c: _junk.map(lambda j: {**j, **c}))
_POD_CONDITIONS = ["Ready", "ContainersReady", "PodScheduled"]
_condition = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["Ready", "ContainersReady", "PodScheduled", "Initialized"]),
        "status": st.sampled_from(["True", "False", "Unknown"]),
    },
    optional={"lastProbeTime": st.none(), "reason": _text},
)
_owner = st.fixed_dictionaries(
    {"apiVersion": st.just("apps/v1"), "kind": _text, "name": _text, "uid": _text},
    optional={"controller": st.booleans(), "blockOwnerDeletion": st.booleans()},
)


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    pod = copy.deepcopy(POD)
    meta, spec, status = pod["metadata"], pod["spec"], pod["status"]
    meta["labels"] = draw(st.dictionaries(_text, _text, max_size=4))
    meta["ownerReferences"] = draw(st.lists(_owner, max_size=3))
    if draw(st.booleans()):
        meta["deletionTimestamp"] = draw(_text)
    spec["nodeName"] = draw(_text)
    if draw(st.booleans()):
        spec["readinessGates"] = [{"conditionType": draw(_text)}]
    status["phase"] = draw(st.sampled_from(["Running", "Pending", "Succeeded", "Failed", "Unknown"]))
    # Each condition type at most once, as the kubelet writes them: a Ready withdrawn while the
    # containers stay ready (what readinessGates decide) comes often enough to be tried.
    statuses = draw(st.dictionaries(st.sampled_from(_POD_CONDITIONS), st.sampled_from(["True", "False"])))
    status["conditions"] = [{"type": t, "status": v, "lastProbeTime": None} for t, v in statuses.items()]
    status["containerStatuses"] = draw(st.lists(_container, max_size=3))
    if draw(st.booleans()):
        status["initContainerStatuses"] = draw(st.lists(_container, max_size=2))
    for part in ("metadata", "spec", "status"):
        if draw(st.integers(0, 9)) == 0:
            del pod[part]
    return pod


@settings(max_examples=300, deadline=None)
@given(pods())
def test_a_typed_pod_event_gives_the_view_of_the_whole_pod(pod: dict[str, Any]) -> None:
    typed, whole = both(PODS, pod)
    assert views.PodView.from_body(typed.object) == views.PodView.from_body(whole.object)


_taint = st.fixed_dictionaries(
    {"key": _text, "effect": st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"])},
    optional={"value": _text, "timeAdded": _text},
)


@st.composite
def nodes(draw: st.DrawFn) -> dict[str, Any]:
    node = copy.deepcopy(NODE)
    meta = node["metadata"]
    if draw(st.booleans()):
        meta["labels"] = {**meta["labels"], **draw(st.dictionaries(_text, _text, max_size=4))}
    meta["annotations"] = draw(
        st.dictionaries(st.sampled_from(["sro.dev/a", "sro.dev/b", "other/c", "kwok.x-k8s.io/node"]), _text)
    )
    node["spec"] = draw(
        st.fixed_dictionaries(
            {}, optional={"taints": st.lists(_taint, max_size=3), "unschedulable": st.booleans()}
        )
    )
    node["status"]["conditions"] = draw(st.lists(_condition, max_size=3))
    info = node["status"]["nodeInfo"]
    for key in ("kernelVersion", "osImage", "architecture"):
        if draw(st.booleans()):
            info[key] = draw(_text)
    return node


@settings(max_examples=200, deadline=None)
@given(nodes(), st.booleans())
def test_a_typed_node_event_gives_the_view_of_the_whole_node(node: dict[str, Any], again: bool) -> None:
    typed, whole = both(NODES, node)
    previous = views.NodeView.from_body(NODE) if again else None
    assert views.NodeView.from_body(typed.object, previous=previous) == views.NodeView.from_body(
        whole.object, previous=previous
    )
