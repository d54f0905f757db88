"""An indexed in-memory store of projections, fed by a reflector.

Pure. The reflector calls ``upsert``/``delete`` for watch events and ``replace`` for
a list; each returns the ``Change``s it caused, so handlers see exactly what moved.
``replace`` reports every object missing from the new list as a deletion (client-go's
DeltaFIFO tombstones): an object deleted while the watch was down is never missed.
A paged list goes through ``relist``: each page is projected as it arrives and the
whole list applied at once at the end.

Objects are keyed by (namespace, name); cluster-scoped ones have namespace "".
Indexes map an index value (e.g. a node name, an owner) to keys and are kept in
step on every change. A store given ``keep_gone`` also logs the last state of deleted
objects it selects (``gone_since``): a pod that succeeded and was collected between two
reconciles is gone from the cache, but what it proved still counts. Every store also
journals which keys changed (``cursor``, ``changed_since``), so a reader that planned from
it before can tell what moved since without comparing everything again.

A miss raises the same ``NotFound`` the API would, so callers need not know where a
read came from. Values are immutable projections (or, for ``ObjectView``, treated as
read-only), so reads hand them out without copying.
"""

from __future__ import annotations

import collections
import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sro import errors

V = TypeVar("V")
Key = tuple[str, str]
Indexer = Callable[[V], Iterable[str]]

GONE_KEPT = 16_384
"""Deleted objects ``gone_since`` remembers at most: more than a pass's worth of pods the
pod garbage collector takes at once on a 5,000-node cluster; older ones are forgotten."""
JOURNAL_KEPT = 32_768
"""Changes ``changed_since`` remembers at most: a converging fleet of 5,000 nodes makes a
few thousand between two passes; a reader further behind is told it is (None)."""
_EPOCHS = itertools.count(1)
Cursor = tuple[int, int]
"""Where a reader of ``changed_since`` stands: the store's epoch (one per store, so a
cursor of another store is never read against this one) and its change count."""


@dataclass(frozen=True)
class Since:
    """What changed after a cursor: the keys, and the journal index's values of their old
    and new objects (for pods, the nodes they ran on)."""

    keys: frozenset[Key]
    values: frozenset[str]


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
        keep_gone: Callable[[V], bool] | None = None,
        journal_index: str = "",
        project_again: Callable[[Mapping[str, Any], V], V] | None = None,
    ) -> None:
        """``journal_index``: the index whose values ``changed_since`` reports (none: "").
        ``project_again``: the projection of a new version of an object already stored,
        given its stored value to take unchanged parts from (none: ``project``)."""
        self.resource = resource
        self._epoch = next(_EPOCHS)
        self._seq = 0
        # The journal: change number ``_seq - i`` is entry ``-1 - i`` of both logs (numbers
        # are consecutive, so none is stored: at 32,768 entries a store, each tuple and
        # number an entry would cost more than the keys it names).
        self._journal_keys: collections.deque[Key] = collections.deque(maxlen=JOURNAL_KEPT)
        self._journal_touched: collections.deque[tuple[str, ...]] = collections.deque(maxlen=JOURNAL_KEPT)
        self._journal_indexer = (indexers or {}).get(journal_index) if journal_index else None
        self._keep_gone = keep_gone
        # The log of the gone, numbered the same way: ``_gone_seq - i`` is entry ``-1 - i``.
        self._gone: collections.deque[V] = collections.deque(maxlen=GONE_KEPT)
        self._gone_seq = 0
        self._project = project
        self._project_again = project_again
        self._indexers = dict(indexers or {})
        self._items: dict[Key, V] = {}
        self._versions: dict[Key, str] = {}
        # The key object first stored for each key: every event decodes a new, equal one,
        # and the journal keeps tens of thousands of entries; each refers to the stored
        # key instead of holding its own tuple and strings.
        self._keys: dict[Key, Key] = {}
        # Invariant: _indexes[name][value] holds exactly the keys whose object yields value.
        self._indexes: dict[str, dict[str, set[Key]]] = {name: {} for name in self._indexers}
        self.synced = False
        self.resource_version = ""

    # -- writes (the reflector) ----------------------------------------------

    def upsert(self, body: Mapping[str, Any]) -> Change[V] | None:
        """Store an added or modified object; None if this version is already stored."""
        key = key_of(body)
        version = _version_of(body)
        if version and self._versions.get(key) == version:
            return None
        return self._put(key, version, self._projected(key, body))

    def _projected(self, key: Key, body: Mapping[str, Any]) -> V:
        old = self._items.get(key) if self._project_again is not None else None
        if old is None or self._project_again is None:
            return self._project(body)
        return self._project_again(body, old)

    def delete(self, body: Mapping[str, Any]) -> Change[V] | None:
        return self._delete_key(key_of(body))

    def relist(self) -> Relist[V]:
        """Start replacing the store's contents with a fresh list, one page at a time.

        ``Relist.add`` projects each page as it arrives, so the raw pages never pile up
        (a 5,000-node list is tens of MiB of JSON, its projections a few); the store
        itself is untouched, and read as before, until ``Relist.commit``.
        """
        return Relist(self)

    def replace(self, bodies: Iterable[Mapping[str, Any]], resource_version: str) -> list[Change[V]]:
        """Make the store equal a fresh list; report additions, changes and deletions."""
        fresh = self.relist()
        fresh.add(bodies)
        return fresh.commit(resource_version)

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

    def gone_since(self, cursor: int | None) -> tuple[int, list[V]]:
        """The deleted objects ``keep_gone`` selected since ``cursor`` (oldest first; those
        past ``GONE_KEPT`` are forgotten), and the cursor to hand back next time; None
        starts from now, with nothing."""
        if cursor is None:
            return self._gone_seq, []
        since = list(_newest(self._gone, self._gone_seq - cursor))
        since.reverse()
        return self._gone_seq, since

    @property
    def cursor(self) -> Cursor:
        """Where the store stands now, for ``changed_since`` later."""
        return (self._epoch, self._seq)

    def changed_since(self, cursor: Cursor | None) -> Since | None:
        """Every key changed (added, modified, deleted) after ``cursor``, with the journal
        index's values of its old and new objects; None when that is not known: no cursor,
        one of another store, or one older than the ``JOURNAL_KEPT`` last changes."""
        if (
            cursor is None
            or cursor[0] != self._epoch
            or not 0 <= self._seq - cursor[1] <= len(self._journal_keys)
        ):
            return None
        keys: set[Key] = set()
        values: set[str] = set()
        count = self._seq - cursor[1]
        for key, touched in zip(
            _newest(self._journal_keys, count), _newest(self._journal_touched, count), strict=True
        ):
            keys.add(key)
            values.update(touched)
        return Since(keys=frozenset(keys), values=frozenset(values))

    def __len__(self) -> int:
        return len(self._items)

    # -- internals ------------------------------------------------------------

    def _note(self, key: Key, old: V | None, new: V | None) -> None:
        """Journal one change (``changed_since``)."""
        self._seq += 1
        indexer = self._journal_indexer
        touched: list[str] = []
        if indexer is not None:
            for value in (old, new):
                if value is not None:
                    touched.extend(indexer(value))
        self._journal_keys.append(key)
        alike = len(touched) == 1 or (len(touched) == 2 and touched[0] == touched[1])
        self._journal_touched.append(_one(touched[0]) if alike else tuple(touched))

    def _put(self, key: Key, version: str, new: V) -> Change[V]:
        key = self._keys.setdefault(key, key)
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = new
        self._versions[key] = version
        self._index(key, new)
        self._note(key, old, new)
        return Change(old, new)

    def _delete_key(self, key: Key) -> Change[V] | None:
        key = self._keys.pop(key, key)
        old = self._items.pop(key, None)
        self._versions.pop(key, None)
        if old is None:
            return None
        self._unindex(key, old)
        self._note(key, old, None)
        if self._keep_gone is not None and self._keep_gone(old):
            self._gone_seq += 1
            self._gone.append(old)
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


E = TypeVar("E")


def _newest(log: collections.deque[E], count: int) -> Iterator[E]:
    """The last ``count`` entries of ``log`` (all it holds when it holds fewer; none for a
    count below one), newest first."""
    return itertools.islice(reversed(log), max(count, 0))


@functools.lru_cache(maxsize=4096)
def _one(value: str) -> tuple[str]:
    """``(value,)`` held once: most changes touch one index value (a pod's node, before and
    after), and the journal holds tens of thousands of them."""
    return (value,)


def _version_of(body: Mapping[str, Any]) -> str:
    return str((body.get("metadata") or {}).get("resourceVersion", ""))


class Relist(Generic[V]):
    """A fresh list being read into a store: pages projected as they come, applied at once.

    Only the projections of objects whose version the store does not hold yet are
    made; an unchanged object keeps the projection the store has. ``commit`` applies
    the lot in one step (no await inside), so no reader ever sees half a relist, and
    reports what changed: additions and changes in list order, then every stored
    object the list did not name, as a deletion.
    """

    def __init__(self, store: Store[V]) -> None:
        self._store = store
        # key -> (version, projection), or None for "listed, same version as stored".
        self._fresh: dict[Key, tuple[str, V] | None] = {}
        self._committed = False

    def add(self, bodies: Iterable[Mapping[str, Any]]) -> int:
        """Project one page; returns how many objects it held."""
        count = 0
        stored = self._store._versions
        for body in bodies:
            count += 1
            key = key_of(body)
            version = _version_of(body)
            if version and stored.get(key) == version:
                self._fresh[key] = None
            else:
                self._fresh[key] = (version, self._store._projected(key, body))
        return count

    def __len__(self) -> int:
        return len(self._fresh)

    def commit(self, resource_version: str) -> list[Change[V]]:
        """Make the store equal the list read so far; the changes it made."""
        if self._committed:
            raise RuntimeError("a relist is committed once")
        self._committed = True
        store = self._store
        changes: list[Change[V]] = []
        for key, fresh in self._fresh.items():
            if fresh is not None:
                version, new = fresh
                if not (version and store._versions.get(key) == version):
                    changes.append(store._put(key, version, new))
        for key in [k for k in store._items if k not in self._fresh]:
            change = store._delete_key(key)
            if change is not None:
                changes.append(change)
        store.resource_version = resource_version
        store.synced = True
        self._fresh = {}
        return changes
