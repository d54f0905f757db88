"""A TLS-terminating TCP proxy in front of kube-apiserver that injects network faults.

Faults between a controller and its API server are what lose events and double writes in
production: slow links, connections reset mid-answer (the write happened, the client never
heard), half-open connections (the peer is gone, nothing says so), watch streams that stall
or lag behind the others. This proxy makes them on real TCP, so a test can prove the
operator converges through them and acts once.

It terminates the client's TLS with the API server's own serving certificate (its SANs
cover 127.0.0.1) and opens the upstream connection with the *same client identity* the
client presented: the client certificate's CN names ``<CN>.crt``/``<CN>.key`` in
``--client-certs``. The API server (and its audit log) therefore still tells clients
apart. Between the two TLS ends it reads the HTTP/1.1 request heads, so it knows which
request a connection carries and can delay only the watch of one resource.

Run: ``python hack/lib/faultproxy.py --upstream 127.0.0.1:PORT --pki DIR --client-certs DIR``.
The first stdout line is JSON ``{"listen": port, "control": port}``. Faults are set over
the control port (loopback HTTP, JSON): ``POST /faults`` replaces the standing faults
(``latency``, ``reset_rate``, ``delay_watch``: ``{resource: seconds}``, ``hold_continue``),
``POST /reset`` resets every open connection now, ``POST /stall`` ``{"seconds": S}`` stops
every watch stream for S seconds (nothing lost), ``POST /half-open`` ``{"watches": bool, "user": CN}``
black-holes the open connections (only the watches, only one ``user``'s) without closing them,
``POST /release`` lets held requests go, ``GET /stats`` counts what was done.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import random
import socket
import ssl
import struct
import sys
import time
from collections import Counter
from pathlib import Path

from aiohttp import web
from faultrules import Faults, Request, content_length

CHUNK = 64 * 1024
HEAD_LIMIT = 64 * 1024


def _abort(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (linger 0), as a crashed peer or a middlebox would."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class Proxy:
    def __init__(self, *, upstream: tuple[str, int], pki: Path, client_certs: Path, seed: int) -> None:
        self.upstream = upstream
        self.client_certs = client_certs
        self.faults = Faults()
        self.random = random.Random(seed)
        # Resets are spread, not drawn: every request adds reset_rate to a sum that starts at a
        # seeded phase, and a reset is due each time it passes a whole number. A run of N
        # requests therefore sees N x rate resets (give or take one) instead of a lottery that
        # may draw none of a kind; which requests they hit still depends on the seed.
        self.reset_due = self.random.random()
        self.resets = 0
        self.stats: Counter[str] = Counter()
        self.conns: set[Conn] = set()
        self.released = asyncio.Event()
        self.server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki / "ca.crt"))
        self.server_ssl.load_cert_chain(str(pki / "apiserver.crt"), str(pki / "apiserver.key"))
        self.server_ssl.verify_mode = ssl.CERT_REQUIRED
        self.ca = pki / "ca.crt"
        self._client_ssl: dict[str, ssl.SSLContext] = {}

    def client_ssl(self, cn: str) -> ssl.SSLContext:
        if cn not in self._client_ssl:
            context = ssl.create_default_context(cafile=str(self.ca))
            pair = self.client_certs / cn
            context.load_cert_chain(f"{pair}.crt", f"{pair}.key")
            self._client_ssl[cn] = context
        return self._client_ssl[cn]

    async def accept(self, down_r: asyncio.StreamReader, down_w: asyncio.StreamWriter) -> None:
        peer = down_w.get_extra_info("peercert") or {}
        cn = next((v for rdn in peer.get("subject", ()) for k, v in rdn if k == "commonName"), "")
        try:
            up_r, up_w = await self.connect(cn)
        except (OSError, ssl.SSLError):
            self.stats["upstream_refused"] += 1
            _abort(down_w)
            return
        conn = Conn(proxy=self, down_r=down_r, down_w=down_w, up_r=up_r, up_w=up_w, user=cn)
        self.conns.add(conn)
        self.stats["connections"] += 1
        try:
            await conn.run()
        finally:
            self.conns.discard(conn)

    async def connect(self, cn: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(
            *self.upstream, ssl=self.client_ssl(cn), server_hostname=self.upstream[0]
        )

    def reset_is_due(self, rate: float) -> bool:
        self.reset_due += rate
        if self.reset_due < 1.0:
            return False
        self.reset_due -= 1.0
        return True

    def reset_all(self) -> int:
        conns = list(self.conns)
        for conn in conns:
            conn.reset("reset_now")
        return len(conns)


class Conn:
    """One client connection and its upstream twin, with a delay line in each direction."""

    def __init__(
        self,
        *,
        proxy: Proxy,
        down_r: asyncio.StreamReader,
        down_w: asyncio.StreamWriter,
        up_r: asyncio.StreamReader,
        up_w: asyncio.StreamWriter,
        user: str,
    ) -> None:
        self.proxy = proxy
        self.user = user
        self.down_r, self.down_w, self.up_r, self.up_w = down_r, down_w, up_r, up_w
        self.request: Request | None = None
        self.black_hole = False
        self.stalled_until = 0.0
        self.lose_answer = False
        self.holding = False  # a request is held: the upstream may die and be replaced meanwhile
        self.upstream_back = asyncio.Event()
        self.done = asyncio.Event()
        self.to_up: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
        self.to_down: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    @property
    def watching(self) -> bool:
        return self.request is not None and self.request.watch

    def reset(self, why: str) -> None:
        if not self.done.is_set():
            self.proxy.stats[why] += 1
            _abort(self.down_w)
            _abort(self.up_w)
            self.done.set()

    async def run(self) -> None:
        tasks = [
            asyncio.create_task(self.read_requests()),
            asyncio.create_task(self.read_answers()),
            asyncio.create_task(self.send(self.to_up, upstream=True)),
            asyncio.create_task(self.send(self.to_down, upstream=False)),
        ]
        await self.done.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for w in (self.down_w, self.up_w):
            with contextlib.suppress(Exception):
                w.close()

    async def read_requests(self) -> None:
        """Client to server: split the byte stream into requests, decide each one's fate."""
        buf = b""
        remaining = 0  # body bytes of the current request still to pass
        opaque = False  # a chunked body: stop parsing, pass everything
        try:
            while True:
                data = await self.down_r.read(CHUNK)
                if not data:
                    break
                if self.black_hole:
                    continue
                if opaque:
                    self.push(self.to_up, data)
                    continue
                buf += data
                while buf:
                    if remaining:
                        part, buf = buf[:remaining], buf[remaining:]
                        remaining -= len(part)
                        self.push(self.to_up, part)
                        continue
                    end = buf.find(b"\r\n\r\n")
                    if end < 0:
                        if len(buf) > HEAD_LIMIT:
                            opaque = True
                            self.push(self.to_up, buf)
                            buf = b""
                        break
                    head, buf = buf[: end + 4], buf[end + 4 :]
                    length = content_length(head)
                    if length is None:
                        opaque = True
                    else:
                        remaining = length
                    if not await self.admit(Request.parse(head)):
                        return
                    self.push(self.to_up, head)
                    if opaque:
                        self.push(self.to_up, buf)
                        buf = b""
        except (ConnectionError, OSError, ssl.SSLError, asyncio.IncompleteReadError):
            pass
        finally:
            self.done.set()  # the client went away (even a black-holed one may give up)

    async def admit(self, request: Request) -> bool:
        """Counts the request and applies the faults decided when it arrives; False: reset."""
        proxy, faults = self.proxy, self.proxy.faults
        self.request = request
        proxy.stats["requests"] += 1
        if request.watch:
            proxy.stats["watches"] += 1
            if faults.watch_delay(request.resource):
                proxy.stats[f"watch_delayed.{request.resource}"] += 1
        if request.method == "GET" and "continue" in request.query and faults.hold_continue:
            proxy.stats["continue_held"] += 1
            proxy.released.clear()
            self.holding = True
            await proxy.released.wait()
            if self.up_r.at_eof():  # the API server went away meanwhile: the request goes to its successor
                try:
                    self.up_r, self.up_w = await proxy.connect(self.user)
                except (OSError, ssl.SSLError):
                    self.reset("upstream_refused")
                    return False
                proxy.stats["reconnected_after_hold"] += 1
            self.holding = False
            self.upstream_back.set()
        if faults.reset_rate and proxy.reset_is_due(faults.reset_rate):
            # Half the resets come after the API server has served the request (the write
            # happened, the client never heard). A watch may answer late or never, so its
            # reset always comes before it reaches the API server.
            proxy.resets += 1
            if request.watch or proxy.resets % 2:
                self.reset("reset_before")
                return False
            self.lose_answer = True  # served upstream, then the answer is lost
        return True

    async def read_answers(self) -> None:
        """Server to client: pass bytes on (late, stalled or never, as the faults say)."""
        try:
            while True:
                data = await self.up_r.read(CHUNK)
                if not data and self.holding:
                    self.upstream_back.clear()
                    await self.upstream_back.wait()
                    continue
                if not data:
                    break
                if self.lose_answer:
                    self.reset("reset_after")
                    return
                if self.black_hole:
                    continue
                extra = 0.0
                if self.watching and self.request is not None:
                    extra = self.proxy.faults.watch_delay(self.request.resource)
                self.push(self.to_down, data, extra=extra)
        except (ConnectionError, OSError, ssl.SSLError, asyncio.IncompleteReadError):
            pass
        finally:
            if not self.black_hole:  # a half-open connection never tells the client
                self.done.set()

    def push(self, queue: asyncio.Queue[tuple[float, bytes]], data: bytes, *, extra: float = 0.0) -> None:
        if data:
            queue.put_nowait((time.monotonic() + self.proxy.faults.latency + extra, data))

    async def send(self, queue: asyncio.Queue[tuple[float, bytes]], *, upstream: bool) -> None:
        try:
            while True:
                due, data = await queue.get()
                while True:
                    wait = max(due, 0.0 if upstream else self.stalled_until) - time.monotonic()
                    if wait <= 0:
                        break
                    await asyncio.sleep(wait)
                if self.black_hole:
                    continue
                writer = self.up_w if upstream else self.down_w
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError, ssl.SSLError):
            self.done.set()


def control_app(proxy: Proxy) -> web.Application:
    async def set_faults(request: web.Request) -> web.Response:
        proxy.faults = Faults.parse(await request.json())
        return web.json_response(dataclasses.asdict(proxy.faults))

    async def reset(request: web.Request) -> web.Response:
        return web.json_response({"reset": proxy.reset_all()})

    async def stall(request: web.Request) -> web.Response:
        seconds = float((await request.json()).get("seconds", 5.0))
        until = time.monotonic() + seconds
        stalled = [c for c in proxy.conns if c.watching]
        for conn in stalled:
            conn.stalled_until = until
        proxy.stats["stalled_watches"] += len(stalled)
        return web.json_response({"stalled": len(stalled)})

    async def half_open(request: web.Request) -> web.Response:
        body = await request.json()
        only_watches, user = bool(body.get("watches", False)), str(body.get("user", ""))
        chosen = [c for c in proxy.conns if (c.watching or not only_watches) and (not user or c.user == user)]
        for conn in chosen:
            conn.black_hole = True
        proxy.stats["half_open"] += len(chosen)
        return web.json_response({"half_open": len(chosen)})

    async def release(request: web.Request) -> web.Response:
        proxy.released.set()
        return web.json_response({"released": True})

    async def stats(request: web.Request) -> web.Response:
        open_ = len(proxy.conns)
        watching = sum(1 for c in proxy.conns if c.watching)
        return web.json_response({**proxy.stats, "open": open_, "open_watches": watching})

    app = web.Application()
    app.router.add_post("/faults", set_faults)
    app.router.add_post("/reset", reset)
    app.router.add_post("/stall", stall)
    app.router.add_post("/half-open", half_open)
    app.router.add_post("/release", release)
    app.router.add_get("/stats", stats)
    return app


async def serve(args: argparse.Namespace) -> None:
    host, _, port = args.upstream.rpartition(":")
    proxy = Proxy(
        upstream=(host, int(port)), pki=Path(args.pki), client_certs=Path(args.client_certs), seed=args.seed
    )
    server = await asyncio.start_server(proxy.accept, "127.0.0.1", args.port, ssl=proxy.server_ssl)
    runner = web.AppRunner(control_app(proxy))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    control = runner.addresses[0][1]
    listen = server.sockets[0].getsockname()[1]
    print(json.dumps({"listen": listen, "control": control}), flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="faultproxy", description=__doc__.split("\n\n")[0])
    p.add_argument("--upstream", required=True, help="host:port of kube-apiserver")
    p.add_argument("--pki", required=True, help="the cluster's pki directory (ca.crt, apiserver.crt/.key)")
    p.add_argument("--client-certs", required=True, help="directory of <CN>.crt/<CN>.key client pairs")
    p.add_argument("--port", type=int, default=0, help="listening port (0: a free one)")
    p.add_argument("--seed", type=int, default=0, help="seed of the reset decisions")
    args = p.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
