"""The indexes reconciles look objects up by.

Pure. ``BY_NODE`` finds the pods on a node; ``BY_OWNER`` finds everything one
SpecialResource owns (the ``sro.dev/owner`` label), whatever the kind.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sro.model import specialresource as sr_model

BY_NODE = "node"
BY_OWNER = "owner"


def pod_node(view: Any) -> Iterable[str]:
    node = getattr(view, "node", "")
    return (node,) if node else ()


def owner(view: Any) -> Iterable[str]:
    labels = getattr(view, "labels", None) or {}
    value = labels.get(sr_model.OWNER_LABEL, "")
    return (value,) if value else ()


def for_kind(api_version: str, kind: str) -> dict[str, Any]:
    """The indexers a kind's store keeps."""
    if api_version == "v1" and kind == "Node":
        return {}
    if api_version == "v1" and kind == "Pod":
        return {BY_NODE: pod_node, BY_OWNER: owner}
    return {BY_OWNER: owner}


def journal_for(api_version: str, kind: str) -> str:
    """The index whose values a kind's store journals (``Store.changed_since``): for pods,
    the nodes they ran on, before and after a change."""
    return BY_NODE if api_version == "v1" and kind == "Pod" else ""
