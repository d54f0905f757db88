"""Asking registries about images over HTTP: the v2 manifest ``HEAD``, the token flow, the cache.

``Resolver.resolve(image, secrets=…)`` answers with an ``answers.Answer``; every decision
it takes is one of the pure modules beside it (which credential, which proxy, what a
status means, how long to keep the answer), so this module only sends requests and
reads (bounded) responses. The order of requests is the one a runtime's pull makes:

1. ``HEAD /v2/<repository>/manifests/<tag or digest>`` accepting the OCI index and
   manifest and Docker's manifest list and v2 manifest, with a token already held for
   that repository (or fetched first when the registry asked for tokens before), or
   Basic credentials for a registry that asked for them before (``tokens.Book``);
2. on ``401``: for ``Bearer``, a token from the realm (with the credential as Basic
   auth, or anonymously), then the ``HEAD`` again; for ``Basic``, the ``HEAD`` again
   with the credential;
3. a ``200`` whose ``Docker-Content-Digest`` is absent or malformed is read with ``GET``
   (at most ``max_manifest`` bytes) and its sha256 is the digest; any other status is
   read with ``GET`` for the registry's error text (at most ``max_error_body``).

Registries are untrusted peers: each request has a connect and a total timeout (a
registry trickling bytes is cut off), headers are bounded by aiohttp's
``max_field_size``/``max_line_size``, bodies are read in bounded chunks, redirects
are few. Concurrent questions about one image share one request, and at most
``concurrency`` requests are in flight.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp

from sro import settings as settings_
from sro.images import answers, challenge, credentials, proxies, reference, tokens
from sro.images import cache as cache_
from sro.kube.http import USER_AGENT
from sro.render import values

MANIFEST_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
ACCEPT = ", ".join(MANIFEST_TYPES)
LOOKUP_CACHE = ("hit", "miss", "joined")


class RegistryMetrics(Protocol):
    def registry_request(self, *, kind: str, code: str) -> None: ...

    def registry_lookup(self, *, outcome: str, cache: str) -> None: ...


class _NoMetrics:
    def registry_request(self, *, kind: str, code: str) -> None:
        return None

    def registry_lookup(self, *, outcome: str, cache: str) -> None:
        return None


@dataclass(frozen=True, kw_only=True)
class Settings:
    connect_timeout: float = 5.0
    """Seconds to open a connection (a black-holed registry costs this, not more)."""
    request_timeout: float = 15.0
    """Seconds for a whole request, headers and body: a registry sending a byte a second is cut off."""
    max_header_bytes: int = 16 * 1024
    """Longest header line aiohttp reads; a longer one fails the request (unreachable)."""
    max_error_body: int = 64 * 1024
    """Bytes of an error body read for its text; the rest is never read."""
    max_manifest: int = 4 * 1024 * 1024
    """The distribution spec's bound on a manifest, read only when the digest header is missing."""
    concurrency: int = 8
    """Registry requests in flight at once, across every image."""
    plain_http: frozenset[str] = frozenset()
    """Registry hosts spoken to over plain HTTP besides loopback ones (which always are)."""
    proxy: values.ProxySettings = field(default_factory=values.ProxySettings)
    cache: cache_.Policy = field(default_factory=cache_.Policy)

    @classmethod
    def for_operator(cls, operator: settings_.OperatorSettings) -> Settings:
        """What ``sro run`` asks registries with: through its ``--http-proxy``,
        ``--https-proxy`` and ``--no-proxy``, the road its nodes' pulls take."""
        proxy = values.ProxySettings(
            http=operator.http_proxy, https=operator.https_proxy, no_proxy=operator.no_proxy
        )
        return cls(proxy=proxy)


class _Failed(Exception):
    """The question ended with this answer before the manifest was asked (a token refused)."""

    def __init__(self, answer: answers.Answer) -> None:
        super().__init__(answer.detail)
        self.answer = answer


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def _read(resp: aiohttp.ClientResponse, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of the body, and whether there was more."""
    data = bytearray()
    async for chunk in resp.content.iter_chunked(16 * 1024):
        data += chunk
        if len(data) > limit:
            return bytes(data[:limit]), True
    return bytes(data), False


class Resolver:
    """Answers "does this image exist, and with which digest?" for many images, cached."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        metrics: RegistryMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings or Settings()
        self.cache = cache_.AnswerCache(self.settings.cache, clock=clock)
        self._metrics: RegistryMetrics = metrics or _NoMetrics()
        self._clock = clock
        self._session: aiohttp.ClientSession | None = None
        self._limit = asyncio.Semaphore(self.settings.concurrency)
        self._inflight: dict[cache_.Key, asyncio.Future[answers.Answer]] = {}
        self._book = tokens.Book(clock=clock)
        self._token_tasks: dict[tokens.Key, asyncio.Future[str]] = {}

    async def __aenter__(self) -> Resolver:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        pending: list[asyncio.Future[Any]] = [*self._inflight.values(), *self._token_tasks.values()]
        for task in pending:
            task.cancel()
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            s = self.settings
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=s.request_timeout, connect=s.connect_timeout),
                headers={"User-Agent": USER_AGENT},
                max_line_size=s.max_header_bytes,
                max_field_size=s.max_header_bytes,
                trust_env=False,  # the operator's proxy flags decide, not this process's environment
            )
        return self._session

    # -- the public questions ------------------------------------------------------------

    async def resolve(self, image: str, *, secrets: Sequence[credentials.PullSecret] = ()) -> answers.Answer:
        """The answer for ``image`` with the credential ``secrets`` give its registry."""
        try:
            ref = reference.parse(image)
        except reference.InvalidReference as exc:
            self._metrics.registry_lookup(outcome=answers.Outcome.INVALID, cache="miss")
            return answers.invalid(image=image, detail=str(exc))
        credential = credentials.pick(secrets, ref)
        key = (image, credential.fingerprint if credential else "")
        cached = self.cache.get(key)
        if cached is not None:
            self._metrics.registry_lookup(outcome=cached.outcome, cache="hit")
            return cached
        task = self._inflight.get(key)
        if task is not None:
            answer = await asyncio.shield(task)
            self._metrics.registry_lookup(outcome=answer.outcome, cache="joined")
            return answer
        task = asyncio.ensure_future(self._ask_and_keep(key, image, ref, credential))
        self._inflight[key] = task
        task.add_done_callback(lambda _: self._inflight.pop(key, None))
        answer = await asyncio.shield(task)
        self._metrics.registry_lookup(outcome=answer.outcome, cache="miss")
        return answer

    async def resolve_all(
        self, images: Iterable[str], *, secrets: Sequence[credentials.PullSecret] = ()
    ) -> dict[str, answers.Answer]:
        """The answers for several images at once (each asked once, concurrently)."""
        unique = list(dict.fromkeys(images))
        found = await asyncio.gather(*(self.resolve(i, secrets=secrets) for i in unique))
        return dict(zip(unique, found, strict=True))

    # -- one question --------------------------------------------------------------------

    async def _ask_and_keep(
        self, key: cache_.Key, image: str, ref: reference.Reference, credential: credentials.Credential | None
    ) -> answers.Answer:
        async with self._limit:
            try:
                answer = await self._ask(image, ref, credential)
            except _Failed as failed:  # maybe raised for another image sharing a token request
                answer = dataclasses.replace(failed.answer, image=image)
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
                answer = answers.unreachable(image=image, detail=f"{ref.api_host}: {_describe(exc)}")
        self.cache.put(key, answer)
        return answer

    def _url(self, ref: reference.Reference) -> str:
        host = ref.api_host
        plain = reference.is_loopback(host) or host in self.settings.plain_http
        return f"{'http' if plain else 'https'}://{host}/v2/{ref.repository}/manifests/{ref.manifest}"

    async def _send(
        self, method: str, url: str, *, kind: str, headers: Mapping[str, str]
    ) -> aiohttp.ClientResponse:
        try:
            resp = await self._http().request(
                method,
                url,
                headers=dict(headers),
                proxy=proxies.for_url(url, self.settings.proxy),
                max_redirects=3,
            )
        except BaseException:
            self._metrics.registry_request(kind=kind, code="error")
            raise
        self._metrics.registry_request(kind=kind, code=str(resp.status))
        return resp

    async def _authorization(
        self, image: str, ref: reference.Reference, credential: credentials.Credential | None
    ) -> dict[str, str]:
        """What to send with the first ``HEAD``: a token held, one fetched because the registry
        asked for tokens before, Basic credentials for a registry that asked for them."""
        held = self._book.header(ref, credential)
        if held:
            return {"Authorization": held}
        known = self._book.bearer(ref.api_host)
        if known is not None:
            return {"Authorization": f"Bearer {await self._token(image, ref, credential, known)}"}
        return {}

    async def _ask(
        self, image: str, ref: reference.Reference, credential: credentials.Credential | None
    ) -> answers.Answer:
        url = self._url(ref)
        headers = {"Accept": ACCEPT, **await self._authorization(image, ref, credential)}
        async with await self._send("HEAD", url, kind="manifest", headers=headers) as resp:
            status, digest = resp.status, resp.headers.get("Docker-Content-Digest", "")
            offered = resp.headers.getall("WWW-Authenticate", [])
        if status == 401 and offered:
            sent = headers.get("Authorization", "")
            retry = await self._answer_challenge(image, ref, credential, offered, sent=sent)
            if retry is not None:
                headers = {"Accept": ACCEPT, **retry}
                async with await self._send("HEAD", url, kind="manifest", headers=headers) as resp:
                    status, digest = resp.status, resp.headers.get("Docker-Content-Digest", "")
        if status == 200 and answers.is_digest(digest):
            return answers.classify(image=image, status=status, digest=digest)
        return await self._read_manifest(image, url, headers=headers, credential=credential)

    async def _read_manifest(
        self, image: str, url: str, *, headers: Mapping[str, str], credential: credentials.Credential | None
    ) -> answers.Answer:
        """The ``GET`` a ``HEAD`` could not settle: the digest computed, or the error's text."""
        s = self.settings
        async with await self._send("GET", url, kind="manifest", headers=headers) as resp:
            ok = resp.status == 200
            body, more = await _read(resp, s.max_manifest if ok else s.max_error_body)
            status, digest = resp.status, resp.headers.get("Docker-Content-Digest", "")
        if ok and more:
            return answers.unreachable(
                image=image, detail=f"the manifest is larger than {s.max_manifest} bytes"
            )
        if ok and not answers.is_digest(digest):
            digest = "sha256:" + hashlib.sha256(body).hexdigest()
        answer = answers.classify(image=image, status=status, digest=digest, body=body)
        if answer.outcome is answers.Outcome.UNAUTHORIZED:
            used = f"the credential of secret {credential.secret}" if credential else "no pull secret"
            return answers.Answer(
                image=image,
                outcome=answer.outcome,
                detail=answers.short(f"{answer.detail} (with {used})"),
                status=answer.status,
            )
        return answer

    async def _answer_challenge(
        self,
        image: str,
        ref: reference.Reference,
        credential: credentials.Credential | None,
        offered: Sequence[str],
        *,
        sent: str,
    ) -> dict[str, str] | None:
        """The Authorization header to send again with, or None when nothing would change.
        A token another check got meanwhile (``sent`` was not it) is used as it is."""
        try:
            asked = challenge.pick(offered)
        except challenge.InvalidChallenge as exc:
            raise _Failed(answers.unreachable(image=image, detail=f"{ref.api_host}: {exc}")) from None
        self._book.learned(ref.api_host, asked)
        held = self._book.header(ref, credential)
        if held and held != sent:
            return {"Authorization": held}
        if asked.scheme is challenge.Scheme.BASIC:
            return None if credential is None else {"Authorization": credentials.basic_header(credential)}
        token = await self._token(image, ref, credential, asked)
        return {"Authorization": f"Bearer {token}"}

    async def _token(
        self,
        image: str,
        ref: reference.Reference,
        credential: credentials.Credential | None,
        asked: challenge.Challenge,
    ) -> str:
        """A fresh token for pulling ``ref``; concurrent askers of one scope share one request."""
        held = tokens.key(ref, credential)
        task = self._token_tasks.get(held)
        if task is None:
            task = asyncio.ensure_future(self._fetch_token(image, ref, credential, asked))
            self._token_tasks[held] = task
            task.add_done_callback(lambda _: self._token_tasks.pop(held, None))
        return await asyncio.shield(task)

    async def _fetch_token(
        self,
        image: str,
        ref: reference.Reference,
        credential: credentials.Credential | None,
        asked: challenge.Challenge,
    ) -> str:
        url = challenge.token_url(asked, repository=ref.repository)
        headers = {"Authorization": credentials.basic_header(credential)} if credential else {}
        try:
            async with await self._send("GET", url, kind="token", headers=headers) as resp:
                body, _ = await _read(resp, self.settings.max_error_body)
                status = resp.status
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
            where = f"the token service of {ref.api_host} ({asked.realm[:100]})"
            raise _Failed(answers.unreachable(image=image, detail=f"{where}: {_describe(exc)}")) from None
        if status in (401, 403):
            used = f"the credential of secret {credential.secret}" if credential else "no credential"
            raise _Failed(
                answers.Answer(
                    image=image,
                    outcome=answers.Outcome.UNAUTHORIZED,
                    detail=answers.short(f"the token service refused {used}: HTTP {status}"),
                    status=status,
                )
            )
        document: Any = None
        if status == 200:
            try:
                document = json.loads(body)
            except ValueError:
                document = None
        token = document.get("token") or document.get("access_token") if isinstance(document, dict) else None
        if not isinstance(token, str) or not token:
            text = body.decode("utf-8", "replace")
            raise _Failed(
                answers.unreachable(image=image, detail=f"the token service answered HTTP {status}: {text}")
            )
        self._book.keep(tokens.key(ref, credential), token, expires_in=document.get("expires_in"))
        return token
