"""The raw API bodies sro reads, as ``TypedDict``s: what a field is called and what it holds.

These describe the JSON the API server sends for the few kinds whose fields the code reads
by name: a SpecialResource, a Node and a Pod (and the metadata every object has). They say
what flows where; they promise nothing about a particular body, which comes from a user and
may be missing fields or carry wrong types, so every reader still checks what it takes
(``model.specialresource.parse``, ``model.views``). ``total=False`` throughout: the API
server omits empty fields.

``NodeBody`` and ``PodBody`` are also what a watch of Nodes or Pods decodes (``sro.watch.events.
Parser``): only the fields they name are read off the wire, so a field ``model.views``
reads must be named here, and every field named is one each event pays for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict


class OwnerReference(TypedDict, total=False):
    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class ObjectMeta(TypedDict, total=False):
    name: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    labels: dict[str, str]
    annotations: dict[str, str]
    finalizers: list[str]
    ownerReferences: list[OwnerReference]


class ObjectBody(TypedDict, total=False):
    """What every object carries: its type and its metadata."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta


class SpecialResourceBody(ObjectBody, total=False):
    """A SpecialResource as the API server stores it; ``spec`` is parsed and checked by
    ``model.specialresource.parse``, ``status`` by ``sro.status``."""

    spec: dict[str, Any]
    status: dict[str, Any]


class TaintBody(TypedDict, total=False):
    key: str
    value: str
    effect: str
    timeAdded: str


class NodeSpec(TypedDict, total=False):
    taints: list[TaintBody]
    unschedulable: bool


class Condition(TypedDict, total=False):
    """A Node's or a Pod's condition: which, and whether it holds (all sro reads of one)."""

    type: str
    status: str


class NodeInfo(TypedDict, total=False):
    kernelVersion: str
    osImage: str
    architecture: str


class NodeStatus(TypedDict, total=False):
    conditions: list[Condition]
    nodeInfo: NodeInfo


class NodeBody(ObjectBody, total=False):
    """A Node: what ``model.views.NodeView.from_body`` keeps of it."""

    spec: NodeSpec
    status: NodeStatus


class PodSpec(TypedDict, total=False):
    nodeName: str
    readinessGates: list[dict[str, str]]


class ContainerStateWaiting(TypedDict, total=False):
    reason: str
    message: str


class ContainerStateTerminated(ContainerStateWaiting, total=False):
    """A reason and a message, as a waiting state has, and the exit code. The API server
    always writes exitCode (0 included): a terminated state read through this type is never
    empty, and ``views`` takes an empty one for no state at all."""

    exitCode: int


class ContainerStateBody(TypedDict, total=False):
    waiting: ContainerStateWaiting
    terminated: ContainerStateTerminated


class ContainerStatusBody(TypedDict, total=False):
    name: str
    ready: bool
    state: ContainerStateBody
    lastState: ContainerStateBody


class PodStatus(TypedDict, total=False):
    phase: str
    conditions: list[Condition]
    initContainerStatuses: list[ContainerStatusBody]
    containerStatuses: list[ContainerStatusBody]


class PodBody(ObjectBody, total=False):
    """A Pod: what ``model.views.PodView.from_body`` keeps of it."""

    spec: PodSpec
    status: PodStatus


def version_number(resource_version: object) -> int:
    """A resourceVersion as the number it is: an etcd revision, one counter for the whole
    cluster, which is what tells an older copy of an object from a newer one; 0 when absent
    or not a number (a version sro then never compares)."""
    try:
        return int(str(resource_version))
    except ValueError:
        return 0


def version_of(body: Mapping[str, Any]) -> int:
    """``version_number`` of a body's ``metadata.resourceVersion``."""
    return version_number((body.get("metadata") or {}).get("resourceVersion"))
