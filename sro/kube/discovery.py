"""What the API server serves: its version, every group-version's kinds and their scope.

One snapshot, ``ClusterFacts``, answers every question the rest of sro asks about the
cluster: ``sro run`` builds renders from it (served kinds, scopes, the version templates
see) and its writers and watches take URL paths from it; ``sro render --live`` reads the
same snapshot once. ``read_facts`` reads it in one pass (``/version``, ``/api``, ``/apis``,
then every group-version concurrently). ``Discovery`` keeps the current snapshot for a
running process: a kind missing from it triggers one read of its group-version, so a CRD
installed after the operator started is found the first time it is needed, and
``Discovery.read`` re-reads everything, at most once per ``min_interval``.

A group-version the server lists but cannot answer for (an aggregated API whose backend
is down answers 503) is recorded as ``unavailable`` and serves nothing until the next read,
rather than failing every render.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Protocol
from urllib.parse import quote

from sro import errors

CONCURRENT_READS = 8
"""Group-version listings read at once: a full read takes a few round trips, not dozens,
without opening a connection per group on a large cluster."""


class Requester(Protocol):
    """The one call discovery makes (``sro.kube.http.Api.request``)."""

    async def request(self, method: str, path: str, *, resource: str = "") -> dict[str, Any]: ...


@dataclass(frozen=True, kw_only=True)
class Resource:
    """A served resource: enough to build its URLs."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, *, namespace: str = "", name: str = "", subresource: str = "") -> str:
        """The URL path of the collection, or of one object (and its subresource)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        return base


@dataclass(frozen=True, kw_only=True)
class ServerVersion:
    """The API server's ``/version``: what templates see as the cluster version."""

    git_version: str = ""
    major: str = ""
    minor: str = ""

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> ServerVersion:
        return cls(
            git_version=str(body.get("gitVersion", "")),
            major=str(body.get("major", "")),
            minor=str(body.get("minor", "")),
        )

    def as_tuple(self) -> tuple[str, str, str]:
        """(gitVersion, major, minor)."""
        return (self.git_version, self.major, self.minor)


Kinds = Mapping[str, Resource]
"""kind -> Resource, for one group-version."""
_NONE: Kinds = MappingProxyType({})
_NONE_GVS: Mapping[str, Kinds] = MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class ClusterFacts:
    """The cluster as one read saw it; a newer read gives a new value, never a changed one."""

    version: ServerVersion = field(default_factory=ServerVersion)
    group_versions: Mapping[str, Kinds] = field(default_factory=lambda: _NONE_GVS)
    """apiVersion -> its kinds; a group-version read and found not served maps to no kinds."""
    unavailable: frozenset[str] = frozenset()
    """Group-versions listed by the server that did not answer (served again after a read)."""
    read_at: float = 0.0
    """``time.monotonic()`` of the last full read; 0 if there was none."""

    def resource(self, api_version: str, kind: str) -> Resource | None:
        return self.group_versions.get(api_version, _NONE).get(kind)

    def is_served(self, api_version: str, kind: str) -> bool:
        return self.resource(api_version, kind) is not None

    def is_namespaced(self, api_version: str, kind: str) -> bool | None:
        """True if namespaced, False if cluster-scoped, None if the kind is not served."""
        found = self.resource(api_version, kind)
        return None if found is None else found.namespaced

    def knows(self, api_version: str) -> bool:
        """Whether ``api_version`` was read (served or not)."""
        return api_version in self.group_versions

    def with_group_version(self, api_version: str, kinds: Kinds | None) -> ClusterFacts:
        """The same facts with one group-version read again (``None``: not served)."""
        updated = {**self.group_versions, api_version: kinds if kinds is not None else _NONE}
        return replace(
            self, group_versions=MappingProxyType(updated), unavailable=self.unavailable - {api_version}
        )


def split(api_version: str) -> tuple[str, str]:
    """(group, version); the core group is ``""``."""
    group, _, version = api_version.rpartition("/")
    return group, version


def _path(api_version: str) -> str:
    group, version = split(api_version)
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def kinds_from(api_version: str, listing: Mapping[str, Any]) -> Kinds:
    """The kinds of one group-version's discovery document (``APIResourceList``)."""
    group, version = split(api_version)
    kinds: dict[str, Resource] = {}
    for entry in listing.get("resources") or ():
        name = str(entry.get("name", ""))
        kind = str(entry.get("kind", ""))
        if not name or not kind or "/" in name:  # subresources such as deployments/status
            continue
        kinds[kind] = Resource(
            group=group,
            version=version,
            kind=kind,
            plural=name,
            namespaced=bool(entry.get("namespaced", False)),
        )
    return MappingProxyType(kinds)


def group_versions_from(core: Mapping[str, Any], groups: Mapping[str, Any]) -> list[str]:
    """Every served group-version, from ``/api`` (``APIVersions``) and ``/apis`` (``APIGroupList``)."""
    found = [str(v) for v in core.get("versions") or ("v1",)]
    for group in groups.get("groups") or ():
        found.extend(str(v.get("groupVersion", "")) for v in group.get("versions") or ())
    return list(dict.fromkeys(v for v in found if v))


async def read_group_version(api: Requester, api_version: str) -> Kinds | None:
    """One group-version's kinds; ``None`` if the server does not serve it."""
    try:
        listing = await api.request("GET", _path(api_version), resource="discovery")
    except errors.NotFound:
        return None
    return kinds_from(api_version, listing)


async def read_facts(api: Requester, *, clock: Callable[[], float] = time.monotonic) -> ClusterFacts:
    """The version, every served group-version, its kinds and their scope, read once."""
    version = await api.request("GET", "/version", resource="version")
    core = await api.request("GET", "/api", resource="discovery")
    groups = await api.request("GET", "/apis", resource="discovery")
    listed = group_versions_from(core, groups)
    limit = asyncio.Semaphore(CONCURRENT_READS)
    unavailable: set[str] = set()

    async def one(api_version: str) -> tuple[str, Kinds | None]:
        async with limit:
            try:
                return api_version, await read_group_version(api, api_version)
            except errors.ServerError:
                unavailable.add(api_version)
                return api_version, None

    read = await asyncio.gather(*(one(v) for v in listed))
    return ClusterFacts(
        version=ServerVersion.from_body(version),
        group_versions=MappingProxyType({v: kinds if kinds is not None else _NONE for v, kinds in read}),
        unavailable=frozenset(unavailable),
        read_at=clock(),
    )


class Discovery:
    """The current ``ClusterFacts`` of a running process, read again when they fall short."""

    def __init__(self, api: Requester, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._api = api
        self._clock = clock
        self._facts = ClusterFacts()
        self._reading: asyncio.Lock | None = None

    @property
    def facts(self) -> ClusterFacts:
        """The latest snapshot (empty until the first ``read``)."""
        return self._facts

    async def read(self, *, min_interval: float = 0.0) -> bool:
        """Read every fact again, unless the last full read is under ``min_interval`` s old.

        Returns whether it read. Concurrent callers share one read.
        """
        if self._reading is None:
            self._reading = asyncio.Lock()
        started = self._clock()
        async with self._reading:
            last = self._facts.read_at
            if last and (last >= started or started - last < min_interval):
                return last >= started  # someone read while we waited: that read is ours too
            self._facts = await read_facts(self._api, clock=self._clock)
            return True

    async def resource(self, api_version: str, kind: str) -> Resource:
        """The resource serving ``kind``; ``NotFound`` if the server does not serve it."""
        found = self._facts.resource(api_version, kind)
        if found is None:
            await self.refresh(api_version)
            found = self._facts.resource(api_version, kind)
        if found is None:
            raise errors.NotFound(f"the server does not serve {kind} in {api_version}", reason="NotFound")
        return found

    def cached(self, api_version: str, kind: str) -> Resource | None:
        """What is known without a request (for synchronous callers)."""
        return self._facts.resource(api_version, kind)

    async def is_served(self, api_version: str, kind: str) -> bool:
        """Whether the server serves ``kind``, reading its group-version again if not known to."""
        try:
            await self.resource(api_version, kind)
        except errors.NotFound:
            return False
        return True

    async def refresh(self, api_version: str) -> None:
        """Read one group-version again (a kind of it was asked for and not known)."""
        self._facts = self._facts.with_group_version(
            api_version, await read_group_version(self._api, api_version)
        )
