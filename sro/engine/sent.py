"""What one SpecialResource's passes sent, and the bodies they send, remembered between passes.

Two records, both keyed by object and pruned to the objects still desired:

* the bodies sent: each applied body's digest and the resourceVersion its apply returned
  (``diff.already_sent``: while the cache has not shown a write, the same body is not
  sent again);
* the owned bodies: each desired object's body as sro sends it (``owned_body``: the owner
  label and reference added) and its ``diff.desired_hash``. The planner hands an unchanged
  object on as the same instance, pass after pass (``plan.walk_memo.interned``), so both
  are kept by that instance: a converging fleet's every pass looks at every open pod of
  every node, and building and hashing each again (about 20 µs) cost a thousand-node
  convergence a third of a CPU-second.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import Any

from sro.apply import diff
from sro.model import desired
from sro.model import specialresource as sr_model


def _labelled(meta: Mapping[str, Any], sr_name: str) -> dict[str, Any]:
    labels = dict(meta.get("labels") or {})
    labels[sr_model.OWNER_LABEL] = sr_name
    return {**meta, "labels": labels}


def owned_body(body: Mapping[str, Any], sr: sr_model.SpecialResource) -> dict[str, Any]:
    """``body`` with the owner label and an owner reference to ``sr`` (kept if already there).

    Rendering already labels recipe objects and their pod templates (``hooks.ownership``);
    the label is set here too for the objects the engine makes itself.
    """
    meta = _labelled(body.get("metadata") or {}, sr.name)
    refs = [
        r
        for r in meta.get("ownerReferences") or ()
        if r.get("uid") != sr.uid and not (r.get("kind") == sr_model.KIND and r.get("name") == sr.name)
    ]
    meta["ownerReferences"] = [*refs, sr.owner_reference()]
    return {**body, "metadata": meta}


class Sent:
    """One SpecialResource's record of the bodies sent and the owned bodies (module docstring)."""

    def __init__(self) -> None:
        self._applied: dict[desired.ObjectRef, tuple[str, int]] = {}
        # ref -> (the desired instance, the owner's name and uid, its owned body, digest)
        self._owned: dict[desired.ObjectRef, tuple[desired.DesiredObject, str, str, dict[str, Any], str]] = {}

    def owned(self, obj: desired.DesiredObject, sr: sr_model.SpecialResource) -> tuple[dict[str, Any], str]:
        """``obj``'s owned body (``owned_body``) and its digest, read-only: shared with the
        passes after this one while ``obj`` is the instance planned."""
        known = self._owned.get(obj.ref)
        if known is not None and known[0] is obj and known[1] == sr.name and known[2] == sr.uid:
            return known[3], known[4]
        body = owned_body(obj.body, sr)
        digest = diff.desired_hash(body)
        self._owned[obj.ref] = (obj, sr.name, sr.uid, body, digest)
        return body, digest

    def applied(self, ref: desired.ObjectRef) -> tuple[str, int] | None:
        """The digest of the body last applied as ``ref`` and the resourceVersion the apply
        returned, or None."""
        return self._applied.get(ref)

    def record(self, ref: desired.ObjectRef, *, digest: str, version: int) -> None:
        self._applied[ref] = (digest, version)

    def keep(self, refs: Container[desired.ObjectRef]) -> None:
        """Forget every object but ``refs`` (those still desired)."""
        self._applied = {ref: h for ref, h in self._applied.items() if ref in refs}
        self._owned = {ref: o for ref, o in self._owned.items() if ref in refs}
