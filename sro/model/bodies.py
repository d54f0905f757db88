"""The raw API bodies sro reads, as ``TypedDict``s: what a field is called and what it holds.

These describe the JSON the API server sends for the few kinds whose fields the code reads
by name: a SpecialResource and a Node (and the metadata every object has). They say what
flows where; they promise nothing about a particular body, which comes from a user and
may be missing fields or carry wrong types, so every reader still checks what it takes
(``model.specialresource.parse``, ``model.views``). ``total=False`` throughout: the API
server omits empty fields.
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


class SpecialResourceBody(TypedDict, total=False):
    """A SpecialResource as the API server stores it; ``spec`` is parsed and checked by
    ``model.specialresource.parse``, ``status`` by ``sro.status``."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta
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


class NodeCondition(TypedDict, total=False):
    type: str
    status: str
    reason: str
    message: str


class NodeInfo(TypedDict, total=False):
    kernelVersion: str
    osImage: str
    architecture: str


class NodeStatus(TypedDict, total=False):
    conditions: list[NodeCondition]
    nodeInfo: NodeInfo
    capacity: dict[str, str]
    allocatable: dict[str, str]


class NodeBody(TypedDict, total=False):
    """A Node: what ``model.views.NodeView.from_body`` keeps of it."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: NodeSpec
    status: NodeStatus


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
