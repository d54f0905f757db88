"""What the caches keep of each kind, so memory follows what reconciles read.

Nodes and Pods are many and are cached as ``NodeView``/``PodView`` (sro.model.views).
Every other kind the operator owns is cached as an ``ObjectView``: a handful of
identity fields plus the full body without ``managedFields``. Owned objects are few
(tens per SpecialResource), readiness reads assorted status fields of assorted kinds,
and drift detection compares the live object with the desired one field by field:
keeping the body is simpler and cheap at that scale.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from sro.model import desired, views

OWNER_LABEL = "sro.dev/owner"

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
            owner=str(labels.get(OWNER_LABEL, "")),
            generation=int(meta.get("generation", 0) or 0),
            observed_generation=int(observed) if isinstance(observed, int) else None,
            resource_version=str(meta.get("resourceVersion", "")),
            deleting=bool(meta.get("deletionTimestamp")),
            body={**body, "metadata": trimmed_meta},
        )


def node(body: Mapping[str, Any]) -> views.NodeView:
    return views.NodeView.from_body(body)


def pod(body: Mapping[str, Any]) -> views.PodView:
    return views.PodView.from_body(body)


def for_kind(api_version: str, kind: str) -> Projection[Any]:
    """The projection the cache uses for a kind."""
    if api_version == "v1" and kind == "Node":
        return node
    if api_version == "v1" and kind == "Pod":
        return pod
    return ObjectView.from_body
