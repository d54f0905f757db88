"""What a resolver remembers about authenticating to registries: tokens held, and how each
registry asked to be authenticated.

Without memory every check of a private image costs three requests (a ``401``, a token,
the ``HEAD`` again). A token is kept per registry, repository scope and credential for
90 % of its ``expires_in`` (at most 5 minutes, 60 s when the service gives none); a
registry's Bearer challenge is remembered so a repository asked about for the first
time gets its token before the ``HEAD`` instead of after a ``401``; a registry that asked
for Basic gets the credential up front. Bounded: the least recently learned entries go
first past ``kept``. Pure: the clock is injected.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from sro.images import challenge, credentials, reference

Key = tuple[str, str, str]  # (registry host, scope, credential fingerprint or "")
MAX_LIFETIME = 300.0
DEFAULT_LIFETIME = 60.0


def key(ref: reference.Reference, credential: credentials.Credential | None) -> Key:
    return (ref.api_host, challenge.pull_scope(ref.repository), credential.fingerprint if credential else "")


def lifetime(expires_in: object) -> float:
    """Seconds a token is used: 90 % of what the service says, within (0, 5 min]."""
    given = float(expires_in) if isinstance(expires_in, int | float) and expires_in > 0 else DEFAULT_LIFETIME
    return min(given, MAX_LIFETIME) * 0.9


class Book:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic, kept: int = 256) -> None:
        self._clock = clock
        self._kept = kept
        self._tokens: OrderedDict[Key, tuple[float, str]] = OrderedDict()
        self._bearer: OrderedDict[str, challenge.Challenge] = OrderedDict()
        self._basic: OrderedDict[str, None] = OrderedDict()

    def header(self, ref: reference.Reference, credential: credentials.Credential | None) -> str:
        """The Authorization value to send up front ("" for none)."""
        held = self._tokens.get(key(ref, credential))
        if held is not None and held[0] > self._clock():
            return f"Bearer {held[1]}"
        if credential is not None and ref.api_host in self._basic:
            return credentials.basic_header(credential)
        return ""

    def bearer(self, host: str) -> challenge.Challenge | None:
        """The Bearer challenge ``host`` answered with before, if any."""
        return self._bearer.get(host)

    def learned(self, host: str, asked: challenge.Challenge) -> None:
        book: OrderedDict[str, challenge.Challenge] | OrderedDict[str, None]
        if asked.scheme is challenge.Scheme.BEARER:
            self._bearer[host] = asked
            self._basic.pop(host, None)
            book = self._bearer
        else:
            self._basic[host] = None
            self._bearer.pop(host, None)
            book = self._basic
        book.move_to_end(host)
        while len(book) > self._kept:
            book.popitem(last=False)

    def keep(self, held: Key, token: str, *, expires_in: object) -> None:
        self._tokens[held] = (self._clock() + lifetime(expires_in), token)
        self._tokens.move_to_end(held)
        while len(self._tokens) > self._kept:
            self._tokens.popitem(last=False)
