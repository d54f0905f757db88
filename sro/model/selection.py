"""Which nodes a SpecialResource selects: the one rule, for every layer that asks.

The render picks the nodes it renders for, the planner summarises which nodes each peer
claims, and the node watch decides which SpecialResources a Node change concerns. If
these disagreed, a node could be rendered for but never woken, or claimed by a peer the
render never placed on it; so all of them call these functions. The rule is the one
``spec.nodeSelector`` documents (and Kubernetes applies to a Pod's nodeSelector): a node
is selected when it carries every label of the selector with the same value; an empty
selector selects every node. Without a ``nodeSelector`` of its own a SpecialResource uses
its recipe's default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import overload

from sro.model import specialresource as sr_model
from sro.model import views


def matches(node: views.NodeView | Mapping[str, str], selector: Mapping[str, str]) -> bool:
    """Whether ``node`` (a node, or its labels) carries every label of ``selector``."""
    labels = node.labels if isinstance(node, views.NodeView) else node
    return all(labels.get(k) == v for k, v in selector.items())


def select(
    nodes: Iterable[views.NodeView], selector: Mapping[str, str], *, excluding: frozenset[str] = frozenset()
) -> tuple[views.NodeView, ...]:
    """The nodes ``selector`` selects, except those named in ``excluding``, sorted by name."""
    return tuple(
        sorted((n for n in nodes if n.name not in excluding and matches(n, selector)), key=lambda n: n.name)
    )


def selected_names(nodes: Iterable[views.NodeView], selector: Mapping[str, str]) -> frozenset[str]:
    """The names of the nodes ``selector`` selects (no order needed, so none paid for)."""
    return frozenset(n.name for n in nodes if matches(n, selector))


@overload
def effective_selector(
    sr: sr_model.SpecialResource, *, recipe_default: Mapping[str, str]
) -> Mapping[str, str]: ...


@overload
def effective_selector(
    sr: sr_model.SpecialResource, *, recipe_default: Mapping[str, str] | None
) -> Mapping[str, str] | None: ...


def effective_selector(
    sr: sr_model.SpecialResource, *, recipe_default: Mapping[str, str] | None
) -> Mapping[str, str] | None:
    """The SpecialResource's ``nodeSelector`` when it has one, else its recipe's default.

    ``recipe_default`` is ``None`` when the recipe cannot be read; the answer is then
    ``None`` too (unknown) unless the SpecialResource names its own selector.
    """
    return sr.spec.node_selector if sr.spec.node_selector is not None else recipe_default
