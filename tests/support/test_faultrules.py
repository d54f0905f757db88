"""The fault proxy's reading of request heads (hack/lib/faultrules.py): resource, watch, length."""

from __future__ import annotations

import pytest
from faultrules import Faults, Request, content_length

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("target", "resource", "watch"),
    [
        ("/api/v1/pods?labelSelector=sro.dev%2Fowner&watch=1&resourceVersion=5", "pods", True),
        ("/api/v1/namespaces/sro-system/configmaps?watch=true", "configmaps", True),
        ("/apis/apps/v1/namespaces/x/daemonsets/d", "daemonsets", False),
        ("/apis/apps/v1/daemonsets?limit=500&continue=abc", "daemonsets", False),
        ("/api/v1/namespaces/foo", "namespaces", False),
        ("/api/v1/nodes/n1", "nodes", False),
        ("/apis/sro.dev/v1alpha1/specialresources?watch=1", "specialresources", True),
    ],
)
def test_a_request_line_names_its_resource_and_whether_it_watches(
    target: str, resource: str, watch: bool
) -> None:
    request = Request.parse(f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert (request.method, request.resource, request.watch) == ("GET", resource, watch)


def test_a_continue_token_is_in_the_query() -> None:
    request = Request.parse(b"GET /api/v1/configmaps?limit=500&continue=tok%3D HTTP/1.1\r\n\r\n")
    assert request.query["continue"] == "tok="


def test_the_body_length_comes_from_content_length_and_chunked_is_unknown() -> None:
    assert content_length(b"PATCH /x HTTP/1.1\r\nContent-Length: 12\r\n\r\n") == 12
    assert content_length(b"GET /x HTTP/1.1\r\nHost: h\r\n\r\n") == 0
    assert content_length(b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") is None


def test_standing_faults_delay_only_the_named_resource() -> None:
    faults = Faults.parse({"latency": 0.1, "delay_watch": {"pods": 3}})
    assert (faults.latency, faults.watch_delay("pods"), faults.watch_delay("nodes")) == (0.1, 3.0, 0.0)
    assert Faults.parse({}) == Faults()
