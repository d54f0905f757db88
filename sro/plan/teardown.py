"""Teardown: removing everything a SpecialResource made, for ``Removed`` and for deletion.

Kept apart from ``sro.plan.lifecycle`` (the rules of a managed pass) because it answers
one question of its own, with its own care: when may the finalizer go? Only when nothing
of the SpecialResource is left, on caches that have seen every removal sro sent; and
never held forever by what is not sro's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sro.model import desired, times
from sro.plan import lifecycle, node_patches
from sro.plan import observed as observed_


@dataclass(frozen=True, kw_only=True)
class Teardown:
    """Removing a SpecialResource's footprint: ``done`` when nothing of it is left."""

    delete: tuple[lifecycle.Deletion, ...]
    node_changes: tuple[node_patches.NodeChange, ...]
    done: bool


NAMESPACE_RELEASE = timedelta(seconds=60)
"""How long teardown waits for an operand namespace being deleted that holds nothing of
sro's any more. The API server empties it within seconds, and the finalizer promises
nothing of the SpecialResource is left; but what still holds it after this long (a
tenant's object with a finalizer of its own) is not sro's to wait for, and waiting
would hold the SpecialResource forever."""


def _namespace_going(
    seen: observed_.Observed, ref: desired.ObjectRef, holding: set[str], *, now: datetime
) -> bool:
    """A Namespace being deleted for ``NAMESPACE_RELEASE`` already, holding no object of
    sro's any more."""
    live = seen.objects[ref]
    if ref.kind != "Namespace" or not live.deleting or ref.name in holding:
        return False
    since = times.parse(live.deleted_at)
    return since is None or now - since >= NAMESPACE_RELEASE  # no time: nothing to wait for


def teardown(*, sr_name: str, seen: observed_.Observed, now: datetime) -> Teardown:
    """For ``Removed`` and for deletion: delete every owned object, strip every node.

    The finalizer ``sro.dev/cleanup`` can go when ``done``: no owned object is left (not
    even one being deleted, except a namespace being deleted that holds nothing of sro's)
    and no node carries anything of this SpecialResource.
    """
    delete = lifecycle.deletion_order(
        lifecycle.Deletion(ref=ref, uid=live.uid, reason="removing everything sro made")
        for ref, live in seen.objects.items()
        if not live.deleting and not lifecycle.controller_pod(seen, ref)
    )
    nodes = {n.name: n for n in (*seen.nodes.values(), *seen.departed)}
    changes = lifecycle.strip_nodes(sr_name, sorted(nodes.values(), key=lambda n: n.name))
    left = [ref for ref in seen.objects if not lifecycle.controller_pod(seen, ref)]
    # A namespace being deleted with nothing of sro's left in it is the API server's to
    # finish, usually in seconds; past NAMESPACE_RELEASE what holds it is not sro's.
    holding = {ref.namespace for ref in left if ref.namespace}
    left = [ref for ref in left if not _namespace_going(seen, ref, holding, now=now)]
    # The finalizer may go only on caches that have seen every removal sro sent: a lagging
    # Node cache would show nodes just cleaned by the last pass as clean, and a lagging
    # one could also show labelled nodes as clean, leaving labels and taints behind forever.
    fresh = not seen.lagging
    return Teardown(delete=delete, node_changes=changes, done=fresh and not left and not changes)
