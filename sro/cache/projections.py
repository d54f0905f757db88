"""What the caches keep of each kind, so memory follows what reconciles read.

Nodes and Pods are many and are cached as ``NodeView``/``PodView`` (sro.model.views).
Every other kind the operator owns is cached as an ``ObjectView``: a handful of
identity fields plus the full body without ``managedFields``. Owned objects are few
(tens per SpecialResource), readiness reads assorted status fields of assorted kinds,
and drift detection compares the live object with the desired one field by field:
keeping the body is simpler and cheap at that scale.

Anyone may set the ``sro.dev/owner`` label the owned watches filter on, so an owned watch
keeps the body only of objects whose controller is of the primary kind (for sro, a
SpecialResource: what sro makes), and of ControllerRevisions (the DaemonSet controller
makes them from sro's templates).
Any other labelled object is cached as its identity, owner references, finalizers and
the owner label alone: a tenant's flood of labelled objects costs a few hundred bytes
each, whatever their size, and sro never reads more of them than that.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from sro.model import bodies, desired, specialresource, views

V = TypeVar("V")
Projection = Callable[[Mapping[str, Any]], V]

_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class ObjectView:
    """An owned object: identity, owner, generations, and the body minus managedFields.

    ``body`` must be treated as read-only: the cache hands out the object it holds.
    """

    ref: desired.ObjectRef
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    owner: str = ""  # the sro.dev/owner label: the SpecialResource this belongs to
    generation: int = 0
    observed_generation: int | None = None
    resource_version: str = ""
    deleting: bool = False
    body: Mapping[str, Any] = field(default_factory=dict)

    @property
    def namespace(self) -> str:
        return self.ref.namespace

    @property
    def name(self) -> str:
        return self.ref.name

    @property
    def status(self) -> Mapping[str, Any]:
        status = self.body.get("status")
        return status if isinstance(status, Mapping) else {}

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> ObjectView:
        meta: Mapping[str, Any] = body.get("metadata") or {}
        labels = meta.get("labels") or {}
        status = body.get("status") if isinstance(body.get("status"), Mapping) else {}
        observed = status.get("observedGeneration") if status else None
        trimmed_meta = {k: v for k, v in meta.items() if k != "managedFields"}
        return cls(
            ref=desired.ObjectRef.of(body),
            uid=str(meta.get("uid", "")),
            labels=MappingProxyType({str(k): str(v) for k, v in labels.items()}) if labels else _EMPTY,
            owner=str(labels.get(specialresource.OWNER_LABEL, "")),
            generation=int(meta.get("generation", 0) or 0),
            observed_generation=int(observed) if isinstance(observed, int) else None,
            resource_version=str(meta.get("resourceVersion", "")),
            deleting=bool(meta.get("deletionTimestamp")),
            body={**body, "metadata": trimmed_meta},
        )


def node(body: Mapping[str, Any]) -> views.NodeView:
    return views.NodeView.from_body(body)


def node_again(body: Mapping[str, Any], previous: views.NodeView) -> views.NodeView:
    """A new version of a cached node: its unchanged labels are taken from ``previous``."""
    return views.NodeView.from_body(body, previous=previous)


def again_for_kind(api_version: str, kind: str) -> Callable[[Mapping[str, Any], Any], Any] | None:
    """The projection of a new version of a cached object that reuses the stored one's
    unchanged parts (``store.Store``'s ``project_again``): Nodes, whose every event, each
    heartbeat included, carries a hundred labels that rarely change."""
    if api_version == "v1" and kind == "Node":
        return node_again
    return None


def pod(body: Mapping[str, Any]) -> views.PodView:
    return views.PodView.from_body(body)


def for_kind(api_version: str, kind: str, *, controlled_by: tuple[str, str] | None = None) -> Projection[Any]:
    """The projection the cache uses for a kind; ``controlled_by`` (the primary kind's
    apiVersion and kind), for a watch filtered on the owner label: it keeps whole only
    what an object of that kind controls."""
    if api_version == "v1" and kind == "Node":
        return node
    if api_version == "v1" and kind == "Pod":
        return pod
    if controlled_by is not None and kind != "ControllerRevision":
        return functools.partial(_owned_view, controller=controlled_by)
    return ObjectView.from_body


def body_for_kind(api_version: str, kind: str) -> type | None:
    """The fields of a kind's objects its projection reads, as a ``TypedDict`` a watch
    decodes into (``sro.watch.events.Parser``), or None to decode objects whole: Nodes and
    Pods, whose views read a few dozen fields of bodies that carry hundreds."""
    if api_version == "v1" and kind == "Node":
        return bodies.NodeBody
    if api_version == "v1" and kind == "Pod":
        return bodies.PodBody
    return None


def kept_when_gone(api_version: str, kind: str) -> Callable[[Any], bool] | None:
    """Which deleted objects of a kind the cache logs (``store.Store.gone_since``): pods
    that succeeded, the proof that a per-node pod ran to completion, which its deletion
    (the pod garbage collector's, anyone's) must not take back before a pass has read it."""
    if api_version == "v1" and kind == "Pod":
        return _succeeded
    return None


def _succeeded(pod: views.PodView) -> bool:
    return pod.phase == "Succeeded"


_KEPT_OF_FOREIGN = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")
_FINALIZERS_KEPT = 16  # whether an object has finalizers is what teardown asks of it


def _controlled_by(meta: Mapping[str, Any], controller: tuple[str, str]) -> bool:
    refs = meta.get("ownerReferences")
    return isinstance(refs, list) and any(
        isinstance(r, Mapping)
        and r.get("controller") is True
        and (r.get("apiVersion"), r.get("kind")) == controller
        for r in refs
    )


def _owned_view(body: Mapping[str, Any], *, controller: tuple[str, str]) -> ObjectView:
    meta: Mapping[str, Any] = body.get("metadata") or {}
    if _controlled_by(meta, controller):
        return ObjectView.from_body(body)
    labels = meta.get("labels") or {}
    kept: dict[str, Any] = {k: meta[k] for k in _KEPT_OF_FOREIGN if k in meta}
    refs = meta.get("ownerReferences")
    if isinstance(refs, list):  # the API server allows one controller reference at most
        controllers = [r for r in refs if isinstance(r, Mapping) and r.get("controller") is True]
        kept["ownerReferences"] = controllers[:1]
    finalizers = meta.get("finalizers")
    if isinstance(finalizers, list) and finalizers:
        kept["finalizers"] = finalizers[:_FINALIZERS_KEPT]
    if isinstance(labels, Mapping) and specialresource.OWNER_LABEL in labels:
        kept["labels"] = {specialresource.OWNER_LABEL: labels[specialresource.OWNER_LABEL]}
    identity = {k: body[k] for k in ("apiVersion", "kind") if k in body}
    return ObjectView.from_body({**identity, "metadata": kept})
