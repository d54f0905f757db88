"""The engine's view of the runtime: what it reads, what it writes, what it asks about kinds.

The SpecialResource engine is written against these three narrow protocols rather than
against the manager, caches and clients directly, so the engine reads as the contract's
reconcile steps and ``sro.app`` is the one place that knows how the runtime provides them.
Reads come from caches, writes go to the API server as typed verbs (``sro.apply.ssa.Writer``
implements them; there is no raw request). Two reads go to the API server: an operand
namespace the cache cannot show (it caches only namespaces sro made, and one someone else
made must be seen to be refused, never adopted), and container logs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from sro.cache import projections
from sro.cache import store as store_
from sro.model import bodies, desired, views

if TYPE_CHECKING:
    from sro.engine import image_checks


class Reader(Protocol):
    """Cached reads; a missing object is None, never an error."""

    def special_resource(self, name: str) -> bodies.SpecialResourceBody | None: ...

    def special_resources(self) -> Sequence[bodies.SpecialResourceBody]: ...

    def nodes(self) -> Sequence[views.NodeView]: ...

    def namespace(self, name: str) -> projections.ObjectView | None: ...

    def owned(self, sr_name: str) -> Sequence[projections.ObjectView]:
        """Every cached object of any watched kind labelled ``sro.dev/owner: <sr_name>``."""
        ...

    def pods(self, namespace: str) -> Sequence[views.PodView]: ...

    def pod(self, namespace: str, name: str) -> views.PodView | None: ...

    def pods_gone(self, since: int | None) -> tuple[int, Sequence[views.PodView]]:
        """Pods deleted after they succeeded since the cursor ``since`` (any namespace), and
        the cursor for next time; None: from now on (``cache.store.Store.gone_since``)."""
        ...

    def lagging(self, kinds: Iterable[tuple[str, str]]) -> frozenset[tuple[str, str]]:
        """Of ``kinds``, those whose cache has not yet shown this process's last write."""
        ...

    def cursors(self) -> tuple[store_.Cursor, store_.Cursor]:
        """Where the node and the pod cache stand now (``cache.store.Store.cursor``)."""
        ...

    def changed_since(
        self, cursors: tuple[store_.Cursor, store_.Cursor]
    ) -> tuple[store_.Since | None, store_.Since | None]:
        """What the node and the pod cache changed after ``cursors`` (``Store.changed_since``)."""
        ...


class Writer(Protocol):
    """Writes to the API server; errors are ``sro.errors.ApiError``/``TransportError``."""

    async def apply(
        self, body: Mapping[str, Any], *, dry_run: bool = False, digest: str = ""
    ) -> Mapping[str, Any]:
        """Server-side apply under the operator's field manager (force); ``digest``: the
        body's ``apply.diff.desired_hash``, when the caller has it (else it is computed).
        The answer: the object's metadata (a dry run: the whole object)."""
        ...

    async def delete(self, ref: desired.ObjectRef, *, uid: str = "") -> bool:
        """Delete ``ref`` (precondition on ``uid`` when given); False if it was already gone."""
        ...

    async def create(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """Create ``body``; ``Conflict`` if it already exists."""
        ...

    async def get(self, ref: desired.ObjectRef) -> Mapping[str, Any]:
        """A fresh read from the API server; ``NotFound`` if absent."""
        ...

    async def apply_status(self, ref: desired.ObjectRef, status: Mapping[str, Any]) -> Mapping[str, Any]:
        """Server-side apply of ``status`` through the status subresource; the answer:
        the object's metadata."""
        ...

    async def set_finalizers(
        self, ref: desired.ObjectRef, finalizers: Sequence[str], *, resource_version: str = ""
    ) -> Mapping[str, Any]:
        """Replace the finalizer list, guarded by ``resource_version`` when given."""
        ...

    async def patch_node(self, name: str, patch: Mapping[str, Any]) -> Mapping[str, Any]:
        """A JSON merge patch of a Node; the answer holds its metadata (maybe only that)."""
        ...

    async def post_event(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """Create an Event; one that exists already (AlreadyExists: same name) counts as posted."""
        ...

    async def node_pods(self, node: str, *, label_selector: str = "") -> list[dict[str, Any]]:
        """Every pod bound to ``node`` (those matching ``label_selector``, when given): a
        fresh list from the API server."""
        ...

    async def evict(self, namespace: str, name: str) -> bool:
        """Evict through the Eviction API; False if gone; ``TooManyRequests`` if a PDB says no."""
        ...

    async def pod_log(
        self, *, namespace: str, name: str, container: str, tail_lines: int, limit_bytes: int
    ) -> str:
        """The last ``tail_lines`` lines of a container's log (at most ``limit_bytes``)."""
        ...


class Images(Protocol):
    """The registry's word on a render's per-kernel images (``engine.image_checks``)."""

    async def check(self, wanted: desired.DesiredState) -> image_checks.Checked:
        """``wanted`` with checked images pinned by digest, and the answers per kernel group."""
        ...

    def forget(self, images: Iterable[str]) -> None:
        """Drop the cached answers about ``images``: the next check asks their registries."""
        ...


class Kinds(Protocol):
    """What the cluster serves, and the watches owned kinds need."""

    def is_namespaced(self, api_version: str, kind: str) -> bool | None: ...

    def is_served(self, api_version: str, kind: str) -> bool: ...

    async def ensure_watched(self, api_version: str, kind: str) -> None:
        """Start watching (and caching, by owner label) a kind a recipe uses, once."""
        ...

    def cluster_version(self) -> tuple[str, str, str]:
        """(gitVersion, major, minor) of the API server."""
        ...

    def snapshot(self) -> object:
        """What is served, as an immutable value: a new one whenever discovery reads again
        (the render memo compares it, since renders ask ``is_served``)."""
        ...
