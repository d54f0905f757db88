"""The desired state of one SpecialResource: what rendering produces and planning consumes.

Rendering (``sro.render``, with ``sro.hooks``) turns a SpecialResource, its recipe and the
selected nodes into a ``DesiredState``: every object of every state, already expanded per
kernel group and per node, with the operator's placement injected. Planning
(``sro.plan.planner``) compares it with what the cluster shows and decides what to write.
``sro render`` prints exactly the objects held here, so the two can never disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar, cast

from sro.errors import Location
from sro.model.logpattern import LogPattern

_T = TypeVar("_T")


class ObjectRef(NamedTuple):
    """Identity of an object: apiVersion, kind, namespace ("" if cluster-scoped), name.

    A named tuple, not a dataclass: it keys nearly every mapping the planner reads, for
    every pod and object on every pass, and a tuple hashes, compares and is made in C
    (a frozen dataclass does each in Python, several times slower). Made by keyword."""

    api_version: str
    kind: str
    namespace: str
    name: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{where}{self.name}"

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> ObjectRef:
        meta = body.get("metadata") or {}
        return cls(
            api_version=str(body.get("apiVersion", "")),
            kind=str(body.get("kind", "")),
            namespace=str(meta.get("namespace", "") or ""),
            name=str(meta.get("name", "")),
        )


@dataclass(frozen=True, kw_only=True, order=True)
class OsRelease:
    """An OS release as NFD reports it (``system-os_release.*``)."""

    id: str  # e.g. "rhel", "ubuntu"
    version_id: str  # e.g. "9.4", "22.04"

    @property
    def major(self) -> str:
        return self.version_id.split(".")[0]

    @property
    def minor(self) -> str:
        parts = self.version_id.split(".")
        return parts[1] if len(parts) > 1 else ""

    @cached_property  # every node's kernel group asks, every pass
    def tag(self) -> str:
        """A compact form used in image tags, e.g. ``rhel9.4``."""
        return f"{self.id}{self.version_id}"


@dataclass(frozen=True, kw_only=True, order=True)
class KernelGroup:
    """Nodes that share a kernel and an OS release get one copy of kernel-affine objects."""

    kernel: str  # full version, e.g. 5.14.0-427.13.1.el9_4.x86_64
    os: OsRelease
    arch: str = "x86_64"

    @cached_property
    def _hash(self) -> int:
        return hash((self.kernel, self.os, self.arch))

    def __hash__(self) -> int:  # the fields' hash, once: a group keys mappings every node asks
        return self._hash

    @cached_property  # every node's kernel group asks, every pass
    def key(self) -> str:
        """Stable identity of the group, used in status rows and bookkeeping labels."""
        return f"{self.kernel}|{self.os.tag}"


@dataclass(frozen=True, kw_only=True)
class DesiredObject:
    """One object the operator wants to exist, with what it needs to know to run it.

    ``body`` is the full object as it will be applied (placement, owner label and
    namespace already injected). ``kernel_group`` is set on copies made by the
    kernel-affine hook; ``node`` on pods made per node by the per-node hook.
    """

    body: Mapping[str, Any]
    state: str
    source: Location
    kernel_group: KernelGroup | None = None
    node: str | None = None
    wait: bool = True
    wait_for_logs: LogPattern | None = None
    optional: bool = False

    @cached_property
    def ref(self) -> ObjectRef:
        return ObjectRef.of(self.body)

    @cached_property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @cached_property
    def annotations(self) -> Mapping[str, Any]:
        """``metadata.annotations`` of the body ({} when absent or no mapping): read by
        every hook and by each pass's planner, so looked up once."""
        meta = self.body.get("metadata") or {}
        found = meta.get("annotations") if isinstance(meta, Mapping) else None
        return found if isinstance(found, Mapping) else {}


@dataclass(frozen=True, kw_only=True)
class StateSpec:
    """One state of a recipe and the states it comes after."""

    name: str
    after: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class DesiredState:
    """Everything one SpecialResource wants, for the nodes it currently selects.

    ``states`` are in recipe order; ``after`` edges form a DAG (validated on load).
    ``nodes`` are the names of selected nodes, sorted; ``kernel_groups`` maps each
    selected node to its group. ``warnings`` are for the user (Events, ``sro lint``), never
    a reason to stop.
    """

    sr_name: str
    namespace: str
    recipe: str
    states: tuple[StateSpec, ...]
    objects: tuple[DesiredObject, ...]
    nodes: tuple[str, ...]
    kernel_groups: Mapping[str, KernelGroup]
    warnings: tuple[str, ...] = ()  # e.g. optional objects skipped, legacy annotations ignored
    documents: object = field(default=None, compare=False, repr=False)
    """The rendered documents this state was made from (``sro.render.engine.Memo``), which
    the next render of the same SpecialResource may take again; no part of what is wanted."""
    derived: dict[str, object] = field(default_factory=dict, init=False, compare=False, repr=False)
    """What pure functions elsewhere worked out of this very state, kept with it (``keep``:
    the planner's split of the build states, the upgrade's revision): the engine hands the
    same state pass after pass while nothing it was rendered from changed, and at a
    thousand nodes working those out again took a tenth of an unchanged pass's plan.
    ``dataclasses.replace`` does not copy it (nor the cached properties): a changed state
    starts empty."""

    @cached_property
    def refs(self) -> frozenset[ObjectRef]:
        """Every object's ref (a pass asks which owned objects are no longer desired)."""
        return frozenset(o.ref for o in self.objects)

    @cached_property
    def by_node(self) -> Mapping[str, tuple[DesiredObject, ...]]:
        """The per-node objects by their node, in ``objects`` order: a pass reads each
        node's states once for all its objects, not once per object."""
        grouped: dict[str, list[DesiredObject]] = {}
        for obj in self.objects:
            if obj.node is not None:
                grouped.setdefault(obj.node, []).append(obj)
        return MappingProxyType({node: tuple(objs) for node, objs in grouped.items()})

    @cached_property
    def first_of_kind(self) -> Mapping[tuple[str, str], DesiredObject]:
        """The first object of each (apiVersion, kind): the kinds a pass must watch."""
        first: dict[tuple[str, str], DesiredObject] = {}
        for obj in self.objects:
            first.setdefault((obj.ref.api_version, obj.ref.kind), obj)
        return MappingProxyType(first)

    @cached_property
    def cluster_wide(self) -> tuple[DesiredObject, ...]:
        """The objects of no node, in ``objects`` order."""
        return tuple(o for o in self.objects if o.node is None)

    def keep(self, key: str, make: Callable[[DesiredState], _T]) -> _T:
        """``make(self)``, worked out once for this very state and kept in ``derived``
        under ``key`` (``make`` must depend on nothing but the state)."""
        if key not in self.derived:
            self.derived[key] = make(self)
        return cast(_T, self.derived[key])

    def objects_of(self, state: str) -> tuple[DesiredObject, ...]:
        return tuple(o for o in self.objects if o.state == state)
