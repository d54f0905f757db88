"""The operand namespace: created by sro for one SpecialResource, never adopted.

Namespaced objects of a recipe go to the SpecialResource's operand namespace. sro creates
it (labelled ``sro.dev/owner`` with an owner reference, so teardown and the garbage
collector remove it); a namespace that exists and was not created for this SpecialResource
is reported (``NamespaceInUse``) and nothing is written into it.
"""

from __future__ import annotations

import structlog

from sro import errors
from sro.engine import ports, writes
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


async def create(writer: ports.Writer, sr: sr_model.SpecialResource) -> tuple[outcomes.Failure, ...]:
    """Create the operand namespace, owned and labelled. A create, not an apply: if someone
    made it meanwhile, the answer is 409 and the next pass reports NamespaceInUse."""
    body = writes.owned_body(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": sr.spec.namespace}}, sr
    )
    try:
        await writer.create(body)
        log.info("namespace created", sr=sr.name, namespace=sr.spec.namespace)
    except errors.SroError as exc:
        return (outcomes.Failure(state="namespace", ref=desired.ObjectRef.of(body), error=exc),)
    return ()
