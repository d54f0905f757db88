"""Which resource serves a kind: apiVersion/kind -> plural and scope.

Answers are cached per group-version. A kind not in the cache triggers one refresh
of its group-version, so a CRD installed after the operator started is found the
first time it is needed; a group-version the server does not serve is remembered
as empty until the next miss asks again.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from sro import errors
from sro.kube import http


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


def _split(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


class Discovery:
    def __init__(self, api: http.Api) -> None:
        self._api = api
        self._by_gv: dict[str, dict[str, Resource]] = {}

    async def resource(self, api_version: str, kind: str) -> Resource:
        """The resource serving ``kind``; ``NotFound`` if the server does not serve it."""
        found = self._by_gv.get(api_version, {}).get(kind)
        if found is None:
            await self.refresh(api_version)
            found = self._by_gv.get(api_version, {}).get(kind)
        if found is None:
            raise errors.NotFound(f"the server does not serve {kind} in {api_version}", reason="NotFound")
        return found

    def cached(self, api_version: str, kind: str) -> Resource | None:
        """What is known without a request (for synchronous callers)."""
        return self._by_gv.get(api_version, {}).get(kind)

    async def is_served(self, api_version: str, kind: str) -> bool:
        try:
            await self.resource(api_version, kind)
        except errors.NotFound:
            return False
        return True

    async def refresh(self, api_version: str) -> None:
        group, version = _split(api_version)
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            listing = await self._api.request("GET", path, resource="discovery")
        except errors.NotFound:
            self._by_gv[api_version] = {}
            return
        kinds: dict[str, Resource] = {}
        for entry in listing.get("resources") or ():
            name = str(entry.get("name", ""))
            if not name or "/" in name:  # subresources such as deployments/status
                continue
            kinds[str(entry.get("kind", ""))] = Resource(
                group=group,
                version=version,
                kind=str(entry.get("kind", "")),
                plural=name,
                namespaced=bool(entry.get("namespaced", False)),
            )
        self._by_gv[api_version] = kinds
