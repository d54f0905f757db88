"""``sro.kube.pool`` against a real HTTP/1.1 server on loopback that answers as told.

Each case is one way a server's answer goes: kept alive and reused, chunked, an error
body past its limit, silence past the read timeout, a connection dropped while idle
(sent again only for an idempotent method), bytes that are not HTTP, a closed pool.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from sro.kube import pool


class Server:
    """Reads each request head (and its Content-Length body) and answers with the next of
    ``answers`` (bytes to write; None, or none left: close the connection without
    answering; ``close_after``: close it once the bytes are written)."""

    def __init__(self) -> None:
        self.answers: list[bytes | None] = []
        self.requests: list[bytes] = []
        self.connections = 0
        self.hold = asyncio.Event()
        self.hold.set()
        self.writers: list[asyncio.StreamWriter] = []
        self.close_after = False
        self.received = asyncio.Event()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length) if length else b""
                self.requests.append(head + body)
                self.received.set()
                await self.hold.wait()
                answer = self.answers.pop(0) if self.answers else None
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def ok(body: bytes, *, extra: str = "") -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


@pytest.fixture
async def served() -> AsyncIterator[tuple[Server, pool.Pool]]:
    server = Server()
    listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    connections = pool.Pool(
        host="127.0.0.1", port=port, tls=None, server_hostname=None, size=2, connect_timeout=5
    )
    try:
        yield server, connections
    finally:
        server.hold.set()
        await connections.close()
        for writer in server.writers:
            writer.close()
        listening.close()
        with contextlib.suppress(Exception):
            await listening.wait_closed()


def req(method: str = "GET", path: str = "/api/v1/nodes", data: bytes | None = None) -> bytes:
    headers = {"Accept": "application/json"}
    return pool.request_bytes(method, path, host="127.0.0.1", headers=headers, data=data)


async def test_answers_are_read_whole_and_the_connection_is_reused(served: tuple[Server, pool.Pool]) -> None:
    server, connections = served
    server.answers = [ok(b'{"a": 1}'), ok(b'{"b": 2}')]
    first = await connections.exchange("GET", req(), read_timeout=5, error_limit=100)
    second = await connections.exchange("PATCH", req("PATCH", data=b"{}"), read_timeout=5, error_limit=100)
    assert (first.status, first.body, second.body) == (200, b'{"a": 1}', b'{"b": 2}')
    assert server.connections == 1
    assert server.requests[1].startswith(b"PATCH /api/v1/nodes HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    assert server.requests[1].endswith(b"Content-Length: 2\r\n\r\n{}")


async def test_a_chunked_answer_and_its_retry_after(served: tuple[Server, pool.Pool]) -> None:
    server, connections = served
    server.answers = [
        b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    ]
    answer = await connections.exchange("GET", req(), read_timeout=5, error_limit=100)
    assert (answer.status, answer.body, answer.retry_after) == (429, b"hello world", "3")


async def test_an_error_body_is_kept_to_its_limit_and_its_connection_closed(
    served: tuple[Server, pool.Pool],
) -> None:
    server, connections = served
    body = b"x" * 1000
    server.answers = [
        f"HTTP/1.1 500 Oops\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body,
        ok(b"{}"),
    ]
    answer = await connections.exchange("GET", req(), read_timeout=5, error_limit=10)
    assert (answer.status, answer.body) == (500, b"x" * 10)
    assert (await connections.exchange("GET", req(), read_timeout=5, error_limit=10)).body == b"{}"
    assert server.connections == 2


async def test_silence_past_the_read_timeout_fails_and_closes(served: tuple[Server, pool.Pool]) -> None:
    server, connections = served
    server.hold.clear()
    server.answers = [ok(b"late")]
    with pytest.raises(TimeoutError):
        await connections.exchange("GET", req(), read_timeout=0.2, error_limit=10)
    assert connections.open == 0


async def test_a_slow_answer_that_keeps_coming_is_not_cut(served: tuple[Server, pool.Pool]) -> None:
    server, connections = served
    server.answers = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"]

    async def trickle() -> None:
        await server.received.wait()
        for _ in range(6):  # 0.6 s in all, never 0.3 s of silence
            await asyncio.sleep(0.1)
            server.writers[0].write(b"1\r\nx\r\n")
        server.writers[0].write(b"0\r\n\r\n")

    feeder = asyncio.create_task(trickle())
    answer = await connections.exchange("GET", req(), read_timeout=0.3, error_limit=10)
    await feeder
    assert answer.body == b"xxxxxx"


@pytest.mark.parametrize(("method", "sent_again"), [("GET", True), ("POST", False)])
async def test_an_idle_connection_the_server_dropped(
    served: tuple[Server, pool.Pool], method: str, sent_again: bool
) -> None:
    server, connections = served
    server.answers = [ok(b"1"), None, ok(b"2")]
    await connections.exchange(method, req(method, data=b"{}"), read_timeout=5, error_limit=10)
    if sent_again:
        answer = await connections.exchange(method, req(method, data=b"{}"), read_timeout=5, error_limit=10)
        assert answer.body == b"2"
    else:
        with pytest.raises(pool.Lost) as lost:
            await connections.exchange(method, req(method, data=b"{}"), read_timeout=5, error_limit=10)
        assert lost.value.unanswered
    assert server.connections == (2 if sent_again else 1)


async def test_an_answer_cut_short_is_lost_and_not_sent_again(served: tuple[Server, pool.Pool]) -> None:
    server, connections = served
    server.answers = [b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this"]
    server.close_after = True
    with pytest.raises(pool.Lost) as lost:
        await connections.exchange("GET", req(), read_timeout=5, error_limit=10)
    assert not lost.value.unanswered
    assert len(server.requests) == 1


async def test_bytes_that_are_not_http(served: tuple[Server, pool.Pool]) -> None:
    server, connections = served
    server.answers = [b"SSH-2.0-OpenSSH_9.6\r\n\r\n"]
    with pytest.raises(pool.Malformed):
        await connections.exchange("GET", req(), read_timeout=5, error_limit=10)
    assert connections.open == 0


async def test_a_refusal_before_sending_keeps_the_connection(served: tuple[Server, pool.Pool]) -> None:
    server, connections = served
    server.answers = [ok(b"1")]

    def refuse() -> None:
        raise PermissionError("fenced")

    await connections.exchange("GET", req(), read_timeout=5, error_limit=10)
    with pytest.raises(PermissionError):
        await connections.exchange("GET", req(), read_timeout=5, error_limit=10, before_send=refuse)
    assert connections.open == 1 and len(server.requests) == 1


async def test_requests_wait_for_a_connection_beyond_the_pool_size(served: tuple[Server, pool.Pool]) -> None:
    server, connections = served
    server.answers = [ok(str(i).encode()) for i in range(6)]
    answers = await asyncio.gather(
        *(connections.exchange("GET", req(), read_timeout=5, error_limit=10) for _ in range(6))
    )
    assert sorted(a.body for a in answers) == [str(i).encode() for i in range(6)]
    assert server.connections == 2


async def test_a_waiter_cancelled_once_woken_hands_its_turn_on(served: tuple[Server, pool.Pool]) -> None:
    server, connections = served
    first, _ = await connections._acquire()
    second, _ = await connections._acquire()  # the pool's two connections, both in use
    woken = asyncio.create_task(connections._acquire())
    after = asyncio.create_task(connections._acquire())
    await asyncio.sleep(0)  # one loop turn: each task runs to its wait
    assert len(connections._waiting) == 2
    connections._release(first, keep=True)  # wakes ``woken``...
    woken.cancel()  # ...which is cancelled before it runs
    got, reused = await asyncio.wait_for(after, timeout=5)  # the turn passed on, not lost
    assert got is first and reused
    assert woken.cancelled()
    connections._release(second, keep=True)
    connections._release(got, keep=True)
    assert server.connections == 2


async def test_a_cancelled_exchange_closes_its_connection(served: tuple[Server, pool.Pool]) -> None:
    server, connections = served
    server.hold.clear()
    task = asyncio.create_task(connections.exchange("GET", req(), read_timeout=5, error_limit=10))
    await server.received.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert connections.open == 0
    server.answers = [ok(b"late"), ok(b"fresh")]  # the first to the cancelled request's connection
    server.hold.set()
    assert (await connections.exchange("GET", req(), read_timeout=5, error_limit=10)).body == b"fresh"


async def test_a_closed_pool_refuses(served: tuple[Server, pool.Pool]) -> None:
    _, connections = served
    await connections.close()
    with pytest.raises(pool.Lost):
        await connections.exchange("GET", req(), read_timeout=5, error_limit=10)


def test_targets_are_encoded_where_they_must_be() -> None:
    assert pool.target("/api/v1/nodes/a b", None) == "/api/v1/nodes/a%20b"
    assert pool.target("/k8s/clusters/c-1/api/v1/pods", {"labelSelector": "a=b,c in (d)", "limit": "5"}) == (
        "/k8s/clusters/c-1/api/v1/pods?labelSelector=a%3Db%2Cc%20in%20%28d%29&limit=5"
    )
    assert pool.target("/api/v1/namespaces/x/pods/p%2F", None) == "/api/v1/namespaces/x/pods/p%2F"
