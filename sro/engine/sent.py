"""What one SpecialResource's passes sent, and the digests of what they send, kept between passes.

Two records, both keyed by object and pruned to the objects still desired:

* the bodies sent: each applied body's digest and the resourceVersion its apply returned
  (``diff.already_sent``: while the cache has not shown a write, the same body is not
  sent again);
* the digests: each desired object's ``diff.desired_hash`` of its body as sro sends it
  (``owned_body``: the owner label and reference added). The planner hands an unchanged
  object on as the same instance, pass after pass (``plan.walk_memo.interned``), so the
  digest is kept by that instance: a converging fleet's every pass looks at every open
  pod of every node, and hashing each again (16 µs) cost a thousand-node convergence a
  third of a CPU-second. The owned body itself is built again each time (about 2 µs): kept,
  it would be about 1 KB a pod, 15 MB at 5,000 nodes.
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
    """One SpecialResource's record of the bodies sent and the digests (module docstring)."""

    def __init__(self) -> None:
        self._applied: dict[desired.ObjectRef, tuple[str, int]] = {}
        # ref -> (the desired instance, the owner's name and uid, the digest of its owned body)
        self._digests: dict[desired.ObjectRef, tuple[desired.DesiredObject, str, str, str]] = {}

    def owned(self, obj: desired.DesiredObject, sr: sr_model.SpecialResource) -> tuple[dict[str, Any], str]:
        """``obj``'s owned body (``owned_body``, built afresh) and its digest (``digest``)."""
        body = owned_body(obj.body, sr)
        return body, self.digest(obj, sr, body=body)

    def digest(
        self,
        obj: desired.DesiredObject,
        sr: sr_model.SpecialResource,
        *,
        body: Mapping[str, Any] | None = None,
    ) -> str:
        """The ``diff.desired_hash`` of ``obj``'s owned body (``body``, when the caller
        built it), kept while ``obj`` is the instance planned."""
        known = self._digests.get(obj.ref)
        if known is not None and known[0] is obj and known[1] == sr.name and known[2] == sr.uid:
            return known[3]
        digest = diff.desired_hash(body if body is not None else owned_body(obj.body, sr))
        self._digests[obj.ref] = (obj, sr.name, sr.uid, digest)
        return digest

    def applied(self, ref: desired.ObjectRef) -> tuple[str, int] | None:
        """The digest of the body last applied as ``ref`` and the resourceVersion the apply
        returned, or None."""
        return self._applied.get(ref)

    def record(self, ref: desired.ObjectRef, *, digest: str, version: int) -> None:
        self._applied[ref] = (digest, version)

    def keep(self, refs: Container[desired.ObjectRef]) -> None:
        """Forget every object but ``refs`` (those still desired)."""
        self._applied = {ref: h for ref, h in self._applied.items() if ref in refs}
        self._digests = {ref: d for ref, d in self._digests.items() if ref in refs}
