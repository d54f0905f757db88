"""An indexed in-memory store of projections, fed by a reflector.

Pure. The reflector calls ``upsert``/``delete`` for watch events and ``replace`` for
a list; each returns the ``Change``s it caused, so handlers see exactly what moved.
``replace`` reports every object missing from the new list as a deletion (client-go's
DeltaFIFO tombstones): an object deleted while the watch was down is never missed.

Objects are keyed by (namespace, name); cluster-scoped ones have namespace "".
Indexes map an index value (e.g. a node name, an owner) to keys and are kept in
step on every change. A miss raises the same ``NotFound`` the API would, so callers
need not know where a read came from. Values are immutable projections (or, for
``ObjectView``, treated as read-only), so reads hand them out without copying.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sro import errors

V = TypeVar("V")
Key = tuple[str, str]
Indexer = Callable[[V], Iterable[str]]


@dataclass(frozen=True)
class Change(Generic[V]):
    """One object's move: created (old None), changed, or deleted (new None)."""

    old: V | None
    new: V | None


def key_of(body: Mapping[str, Any]) -> Key:
    meta = body.get("metadata") or {}
    return (str(meta.get("namespace", "") or ""), str(meta.get("name", "")))


class Store(Generic[V]):
    def __init__(
        self,
        *,
        resource: str,
        project: Callable[[Mapping[str, Any]], V],
        indexers: Mapping[str, Indexer[V]] | None = None,
    ) -> None:
        self.resource = resource
        self._project = project
        self._indexers = dict(indexers or {})
        self._items: dict[Key, V] = {}
        self._versions: dict[Key, str] = {}
        # Invariant: _indexes[name][value] holds exactly the keys whose object yields value.
        self._indexes: dict[str, dict[str, set[Key]]] = {name: {} for name in self._indexers}
        self.synced = False
        self.resource_version = ""

    # -- writes (the reflector) ----------------------------------------------

    def upsert(self, body: Mapping[str, Any]) -> Change[V] | None:
        """Store an added or modified object; None if this version is already stored."""
        key = key_of(body)
        version = str((body.get("metadata") or {}).get("resourceVersion", ""))
        if version and self._versions.get(key) == version:
            return None
        new = self._project(body)
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = new
        self._versions[key] = version
        self._index(key, new)
        return Change(old, new)

    def delete(self, body: Mapping[str, Any]) -> Change[V] | None:
        return self._delete_key(key_of(body))

    def replace(self, bodies: Iterable[Mapping[str, Any]], resource_version: str) -> list[Change[V]]:
        """Make the store equal a fresh list; report additions, changes and deletions."""
        changes: list[Change[V]] = []
        seen: set[Key] = set()
        for body in bodies:
            seen.add(key_of(body))
            change = self.upsert(body)
            if change is not None:
                changes.append(change)
        for key in [k for k in self._items if k not in seen]:
            change = self._delete_key(key)
            if change is not None:
                changes.append(change)
        self.resource_version = resource_version
        self.synced = True
        return changes

    # -- reads ----------------------------------------------------------------

    def get(self, name: str, *, namespace: str = "") -> V:
        try:
            return self._items[(namespace, name)]
        except KeyError:
            where = f"{namespace}/" if namespace else ""
            raise errors.NotFound(f"{self.resource} {where}{name} not found", reason="NotFound") from None

    def find(self, name: str, *, namespace: str = "") -> V | None:
        return self._items.get((namespace, name))

    def values(self, *, namespace: str | None = None) -> list[V]:
        if namespace is None:
            return list(self._items.values())
        return [v for (ns, _), v in self._items.items() if ns == namespace]

    def by_index(self, index: str, value: str) -> list[V]:
        keys = self._indexes[index].get(value, ())
        return [self._items[k] for k in sorted(keys)]

    def index_values(self, index: str) -> list[str]:
        return sorted(v for v, keys in self._indexes[index].items() if keys)

    def keys(self) -> set[Key]:
        return set(self._items)

    def __len__(self) -> int:
        return len(self._items)

    # -- internals ------------------------------------------------------------

    def _delete_key(self, key: Key) -> Change[V] | None:
        old = self._items.pop(key, None)
        self._versions.pop(key, None)
        if old is None:
            return None
        self._unindex(key, old)
        return Change(old, None)

    def _index(self, key: Key, value: V) -> None:
        for name, indexer in self._indexers.items():
            for index_value in indexer(value):
                self._indexes[name].setdefault(index_value, set()).add(key)

    def _unindex(self, key: Key, value: V) -> None:
        for name, indexer in self._indexers.items():
            index = self._indexes[name]
            for index_value in indexer(value):
                keys = index.get(index_value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[index_value]
