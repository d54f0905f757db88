"""What a registry's ``401`` asks for: ``WWW-Authenticate`` read, and the token request it implies.

A registry that wants credentials answers ``401`` with ``Bearer realm=…,service=…,scope=…``
(get a token from ``realm`` and send it) or ``Basic realm=…`` (send the user and password
with each request). The header comes from a peer sro does not control, so it is read
with bounds: a header longer than ``MAX_HEADER`` or with more than ``MAX_PARAMS``
parameters is refused, and a realm must be an ``http(s)`` URL.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import urlencode, urlsplit

MAX_HEADER = 8192
MAX_PARAMS = 16

_PARAM = re.compile(r'\s*([A-Za-z0-9_.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))\s*(?:,|$)')


class Scheme(enum.StrEnum):
    BEARER = "bearer"
    BASIC = "basic"


class InvalidChallenge(ValueError):
    """The ``WWW-Authenticate`` header asks for nothing sro can answer."""


def _empty() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class Challenge:
    scheme: Scheme
    params: Mapping[str, str] = field(default_factory=_empty)

    @property
    def realm(self) -> str:
        return self.params.get("realm", "")


def _params(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        match = _PARAM.match(text, pos)
        if match is None or match.end() == pos:
            raise InvalidChallenge(f"cannot read the parameters {text[:200]!r}")
        name, quoted, bare = match.groups()
        found[name.lower()] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        if len(found) > MAX_PARAMS:
            raise InvalidChallenge(f"more than {MAX_PARAMS} parameters")
        pos = match.end()
    return found


def parse(header: str) -> Challenge:
    """The challenge in one ``WWW-Authenticate`` value; InvalidChallenge when there is none
    sro answers (only Bearer and Basic are)."""
    if len(header) > MAX_HEADER:
        raise InvalidChallenge(f"a WWW-Authenticate header of {len(header)} characters")
    scheme, _, rest = header.strip().partition(" ")
    try:
        kind = Scheme(scheme.lower())
    except ValueError:
        raise InvalidChallenge(f"the scheme {scheme[:50]!r} is neither Bearer nor Basic") from None
    params = _params(rest.strip())
    if kind is Scheme.BEARER:
        try:
            realm = urlsplit(params.get("realm", ""))
            valid = realm.scheme in ("http", "https") and bool(realm.hostname) and realm.port != 0
        except ValueError:  # a bad IPv6 literal or port
            valid = False
        if not valid:
            raise InvalidChallenge(
                f"the Bearer realm {params.get('realm', '')[:200]!r} is not an http(s) URL"
            )
    return Challenge(scheme=kind, params=MappingProxyType(params))


def pick(headers: Iterable[str]) -> Challenge:
    """The challenge to answer among a response's ``WWW-Authenticate`` values: Bearer first
    (a registry offering both prefers tokens), then Basic."""
    found: list[Challenge] = []
    problems: list[str] = []
    for header in headers:
        try:
            found.append(parse(header))
        except InvalidChallenge as exc:
            problems.append(str(exc))
    for scheme in (Scheme.BEARER, Scheme.BASIC):
        for challenge in found:
            if challenge.scheme is scheme:
                return challenge
    raise InvalidChallenge("; ".join(problems) or "a 401 without a WWW-Authenticate header")


def pull_scope(repository: str) -> str:
    return f"repository:{repository}:pull"


def token_url(challenge: Challenge, *, repository: str) -> str:
    """The token endpoint's URL for pulling ``repository``: the realm with ``service`` and a
    pull ``scope`` (the registry's own scope when it named one for ``repository``, as it
    knows best)."""
    query = {}
    if challenge.params.get("service"):
        query["service"] = challenge.params["service"]
    offered = challenge.params.get("scope", "")
    # The registry's scope when it is about this repository; a challenge remembered from
    # another repository's 401 names that one.
    about = any(part.split(":")[1:2] == [repository] for part in offered.split())
    query["scope"] = offered if about else pull_scope(repository)
    joiner = "&" if urlsplit(challenge.realm).query else "?"
    return f"{challenge.realm}{joiner}{urlencode(query)}"
