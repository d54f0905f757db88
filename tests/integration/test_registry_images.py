"""Image checks against real registries on loopback (``sro.images.client.Resolver``).

Covered: an image that exists (with the digest the push returned), a missing tag and a
missing repository, an image deleted; Basic auth (htpasswd) and the Bearer token flow
(the registry verifying the test token server's signed tokens), each refused without
the pull secret and answered with it; a registry answering 500, a closed port, a slow
registry, huge headers and bodies, each reported as unreachable (never missing); the
cache (hits within the TTL, the missing answer replaced after its TTL once the image is
pushed) and the metrics that count it; requests through the operator's HTTP proxy (and
around it for a ``NO_PROXY`` name); pull secrets read from a namespace's service account
on the real control plane. Left out: TLS (every registry here is plain HTTP on loopback,
as containerd allows; a TLS failure is one more ``aiohttp.ClientError``).
"""

from __future__ import annotations

import asyncio
import base64
import http.server
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import registry as registry_mod
from support.cluster import Cluster

from sro import settings
from sro.images import answers, cache, client, credentials, secrets
from sro.kube import http
from sro.observe import metrics as metrics_mod
from sro.render import values

pytestmark = pytest.mark.integration


def _start(tmp_path_factory: pytest.TempPathFactory, auth: str) -> Iterator[registry_mod.Registry]:
    started = registry_mod.start(tmp_path_factory.mktemp(f"registry{auth}"), auth=auth)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def open_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[registry_mod.Registry]:
    yield from _start(tmp_path_factory, "")


@pytest.fixture(scope="module")
def basic_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[registry_mod.Registry]:
    yield from _start(tmp_path_factory, "basic")


@pytest.fixture(scope="module")
def token_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[registry_mod.Registry]:
    yield from _start(tmp_path_factory, "token")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pull_secret(reg: registry_mod.Registry, *, password: str | None = None) -> credentials.PullSecret:
    return credentials.PullSecret(
        name="pull", data={credentials.DOCKERCONFIGJSON: reg.dockerconfigjson(password=password)}
    )


async def test_an_image_exists_with_its_digest_until_deleted_and_the_cache_answers_meanwhile(
    open_registry: registry_mod.Registry,
) -> None:
    m = metrics_mod.Metrics()
    clock = Clock()
    pushed = open_registry.push("drivers/driver", "550-5.14.0")
    image = f"{open_registry.host}/drivers/driver:550-5.14.0"
    async with client.Resolver(client.Settings(), metrics=m, clock=clock) as resolver:
        got = await resolver.resolve(image)
        assert (got.outcome, got.digest) == (answers.Outcome.EXISTS, pushed)
        missing_tag = await resolver.resolve(f"{open_registry.host}/drivers/driver:6.0")
        assert missing_tag.outcome is answers.Outcome.MISSING
        assert missing_tag.detail.startswith("MANIFEST_UNKNOWN"), missing_tag.detail
        missing_repo = await resolver.resolve(f"{open_registry.host}/nobody/here:1")
        assert missing_repo.outcome is answers.Outcome.MISSING
        assert missing_repo.detail.split(":")[0] in ("NAME_UNKNOWN", "MANIFEST_UNKNOWN"), missing_repo
        by_digest = await resolver.resolve(f"{open_registry.host}/drivers/driver@{pushed}")
        assert by_digest.digest == pushed
        asked = m.total("sro_registry_requests_total")

        # Twenty nodes asking again within the TTL: the cache answers, the registry is not asked.
        for _ in range(20):
            assert (await resolver.resolve(image)).digest == pushed
        assert m.total("sro_registry_requests_total") == asked
        assert m.value("sro_registry_lookups_total", {"outcome": "exists", "cache": "hit"}) == 20

        open_registry.delete("drivers/driver", pushed)
        assert (await resolver.resolve(image)).exists  # still cached
        clock.now += resolver.settings.cache.exists_ttl
        gone = await resolver.resolve(image)
        assert gone.outcome is answers.Outcome.MISSING, gone


async def test_a_missing_image_is_seen_once_pushed_after_the_negative_ttl(
    open_registry: registry_mod.Registry,
) -> None:
    clock = Clock()
    image = f"{open_registry.host}/drivers/late:1"
    policy = cache.Policy(missing_ttl=30)
    async with client.Resolver(client.Settings(cache=policy), clock=clock) as resolver:
        assert (await resolver.resolve(image)).outcome is answers.Outcome.MISSING
        pushed = open_registry.push("drivers/late", "1")
        clock.now += 29
        assert (await resolver.resolve(image)).outcome is answers.Outcome.MISSING
        clock.now += 1
        assert (await resolver.resolve(image)).digest == pushed


async def test_concurrent_checks_of_one_image_share_one_request(open_registry: registry_mod.Registry) -> None:
    m = metrics_mod.Metrics()
    open_registry.push("drivers/shared", "1")
    image = f"{open_registry.host}/drivers/shared:1"
    async with client.Resolver(metrics=m) as resolver:
        found = await resolver.resolve_all([image, f"{open_registry.host}/drivers/shared:2"])
        assert [a.outcome for a in found.values()] == ["exists", "missing"]
        await asyncio.gather(*(resolver.resolve(f"{open_registry.host}/drivers/shared:3") for _ in range(10)))
    # HEAD then GET for the missing tags' text, HEAD for the one that exists.
    assert m.value("sro_registry_requests_total", {"kind": "manifest", "code": "404"}) == 4
    assert m.value("sro_registry_lookups_total", {"outcome": "missing", "cache": "joined"}) == 9


@pytest.mark.parametrize("auth", ["basic", "token"])
async def test_a_private_registry_refuses_without_the_pull_secret_and_answers_with_it(
    auth: str, basic_registry: registry_mod.Registry, token_registry: registry_mod.Registry
) -> None:
    reg = basic_registry if auth == "basic" else token_registry
    m = metrics_mod.Metrics()
    pushed = reg.push("private/driver", "1")
    image = f"{reg.host}/private/driver:1"
    async with client.Resolver(metrics=m) as resolver:
        anonymous = await resolver.resolve(image)
        assert anonymous.outcome is answers.Outcome.UNAUTHORIZED, anonymous
        assert "no pull secret" in anonymous.detail or "UNAUTHORIZED" in anonymous.detail
        wrong = await resolver.resolve(image, secrets=[pull_secret(reg, password="wrong")])
        assert wrong.outcome is answers.Outcome.UNAUTHORIZED, wrong
        assert "secret pull" in wrong.detail
        right = await resolver.resolve(image, secrets=[pull_secret(reg)])
        assert (right.outcome, right.digest) == (answers.Outcome.EXISTS, pushed), right
        missing = await resolver.resolve(f"{reg.host}/private/driver:2", secrets=[pull_secret(reg)])
        assert missing.outcome is answers.Outcome.MISSING, missing
        refused = m.value("sro_registry_requests_total", {"kind": "manifest", "code": "401"})
        reg.push("private/other", "1")
        other = await resolver.resolve(f"{reg.host}/private/other:1", secrets=[pull_secret(reg)])
        assert other.exists, other
        # The registry's way in is known now: a new repository is asked with credentials at once.
        assert m.value("sro_registry_requests_total", {"kind": "manifest", "code": "401"}) == refused
    if auth == "token":
        # anonymous, right and the other repository got a token; the second tag reused the right one's
        assert m.value("sro_registry_requests_total", {"kind": "token", "code": "200"}) == 3
        assert m.value("sro_registry_requests_total", {"kind": "token", "code": "401"}) == 1


def _answer_500(handler: http.server.BaseHTTPRequestHandler) -> None:
    body = b'{"errors":[{"code":"UNKNOWN","message":"storage backend down"}]}'
    handler.send_response(500)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if handler.command == "GET":
        handler.wfile.write(body)


DEAD_REALM = f"http://127.0.0.1:{registry_mod.free_port()}/token"


def _answer_401_with_a_dead_token_service(handler: http.server.BaseHTTPRequestHandler) -> None:
    handler.send_response(401)
    handler.send_header("WWW-Authenticate", f'Bearer realm="{DEAD_REALM}",service="s"')
    handler.send_header("Content-Length", "0")
    handler.end_headers()


def _answer_huge_header(handler: http.server.BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("X-Junk", "j" * 200_000)
    handler.end_headers()


def _answer_huge_body(handler: http.server.BaseHTTPRequestHandler) -> None:
    handler.send_response(404)
    handler.end_headers()
    if handler.command == "GET":
        for _ in range(64):
            handler.wfile.write(b"x" * 1024 * 1024)


def _answer_slowly(handler: http.server.BaseHTTPRequestHandler) -> None:
    handler.send_response(404)
    handler.send_header("Content-Length", "30")
    handler.end_headers()
    if handler.command == "GET":
        for _ in range(30):  # a byte a second: the error text never arrives within the request timeout
            handler.wfile.write(b"x")
            handler.wfile.flush()
            time.sleep(1)


@pytest.mark.parametrize(
    ("answer", "detail"),
    [
        (_answer_500, "UNKNOWN: storage backend down"),
        (_answer_401_with_a_dead_token_service, "the token service of"),
        (_answer_huge_header, "ClientResponseError"),
        (_answer_huge_body, "HTTP 404"),
    ],
)
async def test_a_failing_registry_is_unreachable_or_bounded_never_taken_at_its_word(
    answer: Any, detail: str
) -> None:
    with registry_mod.http_peer(answer) as peer:
        async with client.Resolver() as resolver:
            got = await resolver.resolve(f"{peer.host}/drivers/driver:1")
    if answer is _answer_huge_body:  # a 404 is missing, whatever follows it; only 64 KiB of it was read
        assert got.outcome is answers.Outcome.MISSING and len(got.detail) <= answers.DETAIL_LIMIT
    else:
        assert got.outcome is answers.Outcome.UNREACHABLE, got
    assert detail in got.detail, got


async def test_a_slow_registry_and_a_closed_port_are_unreachable_within_the_timeouts() -> None:
    fast = client.Settings(connect_timeout=1, request_timeout=1)
    with registry_mod.http_peer(_answer_slowly) as peer:
        async with client.Resolver(fast) as resolver:
            started = time.monotonic()
            slow = await resolver.resolve(f"{peer.host}/drivers/driver:1")
            closed = await resolver.resolve(f"127.0.0.1:{registry_mod.free_port()}/drivers/driver:1")
            elapsed = time.monotonic() - started
    assert (slow.outcome, slow.detail) == (answers.Outcome.UNREACHABLE, f"{peer.host}: timed out")
    assert closed.outcome is answers.Outcome.UNREACHABLE and "Connect" in closed.detail, closed
    assert elapsed < 5


def _forwarding_proxy(target: str) -> Any:
    """An HTTP proxy that knows one name, ``registry.test``, and forwards it to ``target``."""

    def answer(handler: http.server.BaseHTTPRequestHandler) -> None:
        url = urllib.parse.urlsplit(handler.path)  # a proxy is sent the absolute URI
        if url.hostname != "registry.test":
            handler.send_response(502)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        forwarded = {k: v for k, v in handler.headers.items() if k.lower() in ("accept", "authorization")}
        request = urllib.request.Request(
            f"http://{target}{url.path}", method=handler.command, headers=forwarded
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                status, headers, body = resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as exc:
            status, headers, body = exc.code, exc.headers, exc.read()
        handler.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("connection", "transfer-encoding", "content-length", "date", "server"):
                handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if handler.command == "GET":
            handler.wfile.write(body)

    return answer


async def test_registry_requests_go_through_the_operators_proxy_unless_no_proxy_says_otherwise(
    open_registry: registry_mod.Registry,
) -> None:
    pushed = open_registry.push("proxied/driver", "1")
    port = open_registry.host.rpartition(":")[2]
    image = f"registry.test:{port}/proxied/driver:1"  # a name only the proxy can resolve
    with registry_mod.http_peer(_forwarding_proxy(open_registry.host)) as proxy:
        direct = frozenset({f"registry.test:{port}"})
        through = client.Settings(plain_http=direct, proxy=values.ProxySettings(http=proxy.url))
        async with client.Resolver(through) as resolver:
            got = await resolver.resolve(image)
        assert (got.outcome, got.digest) == (answers.Outcome.EXISTS, pushed), got
        assert f"HEAD http://registry.test:{port}/v2/proxied/driver/manifests/1" in proxy.requests
        asked = len(proxy.requests)
        bypass = values.ProxySettings(http=proxy.url, no_proxy="localhost,.test")
        async with client.Resolver(client.Settings(plain_http=direct, proxy=bypass)) as resolver:
            got = await resolver.resolve(image)
        assert got.outcome is answers.Outcome.UNREACHABLE, got  # the name does not resolve here
        assert len(proxy.requests) == asked


async def test_pull_secrets_come_from_the_pod_and_its_service_account(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    for name in ("own", "from-sa"):
        cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name},
                "type": "kubernetes.io/dockerconfigjson",
                "data": {".dockerconfigjson": _config(name)},
            },
            namespace=namespace,
        )
    cluster.kubectl(
        "patch", "serviceaccount", "default", "-n", namespace, "-p",
        '{"imagePullSecrets": [{"name": "from-sa"}, {"name": "absent"}]}',
    )  # fmt: skip
    m = metrics_mod.Metrics()
    pod_spec = {"imagePullSecrets": [{"name": "own"}]}
    kubeconfig = settings.ApiSettings(kubeconfig=str(cluster.kubeconfig))
    async with await http.Api.connect(kubeconfig, metrics=m) as api:
        reader = secrets.Cached(api)
        found, absent = await reader.read(namespace=namespace, pod_spec=pod_spec)
        reads = m.total("sro_api_requests_total")
        assert reads == 4  # the service account, then each secret it and the pod name
        for _ in range(20):  # a reconcile per node: read once
            assert [s.name for s in (await reader.read(namespace=namespace, pod_spec=pod_spec))[0]] == [
                "own",
                "from-sa",
            ]
        assert m.total("sro_api_requests_total") == reads
    assert [s.name for s in found] == ["own", "from-sa"] and absent == ["absent"]
    picked = credentials.pick(found, credentials.reference.parse("reg.example/x"))
    assert picked is not None and picked.secret == "own"


def _config(user: str) -> str:
    auth = base64.b64encode(f"{user}:pw".encode()).decode()
    return base64.b64encode(json.dumps({"auths": {"reg.example": {"auth": auth}}}).encode()).decode()
