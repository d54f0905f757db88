"""The operand namespace: created by sro for one SpecialResource, never adopted.

Namespaced objects of a recipe go to the SpecialResource's operand namespace. sro creates
it (labelled ``sro.dev/owner`` with an owner reference, so teardown and the garbage
collector remove it); a namespace that exists and was not created for this SpecialResource
is reported (``NamespaceInUse``) and nothing is written into it. Its Pod Security labels
(``sro.plan.pod_security``) are set at creation and kept as the recipe and the
SpecialResource change them; a namespace sro did not create is never labelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from sro import errors
from sro.engine import ports
from sro.engine import sent as sent_
from sro.model import desired
from sro.model import specialresource as sr_model
from sro.plan import inputs, outcomes

log = structlog.get_logger(__name__)


def ref(sr: sr_model.SpecialResource) -> desired.ObjectRef:
    return desired.ObjectRef(api_version="v1", kind="Namespace", namespace="", name=sr.spec.namespace)


async def owner(reader: ports.Reader, writer: ports.Writer, sr: sr_model.SpecialResource) -> bool | None:
    """Whether the operand namespace was created for this SpecialResource (it carries the
    owner reference to its uid; the owner label alone proves nothing); None if absent.

    The cache holds only namespaces labelled as sro's, so a miss is asked of the API
    server: a namespace someone else made must be seen, never adopted.
    """
    cached = reader.namespace(sr.spec.namespace)
    if cached is not None:
        return inputs.is_ours(cached.body, sr.uid)
    try:
        found = await writer.get(ref(sr))
    except errors.NotFound:
        return None
    return inputs.is_ours(found, sr.uid)


def current_labels(reader: ports.Reader, sr: sr_model.SpecialResource) -> Mapping[str, str] | None:
    """The labels of the operand namespace as cached, once ``owner`` said it is ours;
    None while the cache does not show it (just created, with its labels)."""
    cached = reader.namespace(sr.spec.namespace)
    return None if cached is None else cached.labels


def _body(sr: sr_model.SpecialResource, labels: Mapping[str, str]) -> dict[str, Any]:
    meta = {"name": sr.spec.namespace, "labels": dict(labels)}
    return sent_.owned_body({"apiVersion": "v1", "kind": "Namespace", "metadata": meta}, sr)


async def create(
    writer: ports.Writer, sr: sr_model.SpecialResource, *, labels: Mapping[str, str]
) -> tuple[outcomes.Failure, ...]:
    """Create the operand namespace, owned and labelled. A create, not an apply: if someone
    made it meanwhile, the answer is 409 and the next pass reports NamespaceInUse."""
    body = _body(sr, labels)
    try:
        await writer.create(body)
        log.info("namespace created", sr=sr.name, namespace=sr.spec.namespace, labels=dict(labels))
    except errors.SroError as exc:
        return (outcomes.Failure(state="namespace", ref=desired.ObjectRef.of(body), error=exc),)
    return ()


async def relabel(
    writer: ports.Writer, sr: sr_model.SpecialResource, *, labels: Mapping[str, str]
) -> tuple[outcomes.Failure, ...]:
    """Give sro's own operand namespace ``labels`` (server-side apply of the labels, the
    owner label and reference only). Call only for a namespace ``owner`` said is ours."""
    body = _body(sr, labels)
    try:
        await writer.apply(body)
        log.info("namespace relabelled", sr=sr.name, namespace=sr.spec.namespace, labels=dict(labels))
    except errors.SroError as exc:
        return (outcomes.Failure(state="namespace", ref=desired.ObjectRef.of(body), error=exc),)
    return ()
