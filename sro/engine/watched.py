"""Every kind a recipe wants is watched before anything of it is written.

The walk judges objects by what the caches show, so a kind nobody watches would be an
object written and never seen ready. A kind that cannot be watched (the server refuses to
list it, or its cache does not list in time) is a failure of the first object of that
kind, reported like a refused write, never a stuck worker.
"""

from __future__ import annotations

import structlog

from sro import errors
from sro.engine import ports
from sro.model import desired
from sro.plan import outcomes

log = structlog.get_logger(__name__)


async def ensure(kinds: ports.Kinds, wanted: desired.DesiredState) -> list[outcomes.Failure]:
    """Start the watches ``wanted`` needs; a failure per kind that cannot be watched."""
    failures = []
    for (api_version, kind), obj in sorted(wanted.first_of_kind.items()):
        try:
            await kinds.ensure_watched(api_version, kind)
        except errors.SroError as exc:
            log.warning("kind not watched", sr=wanted.sr_name, kind=kind, error=str(exc))
            failures.append(outcomes.Failure(state=obj.state, ref=obj.ref, error=exc, source=obj.source))
    return failures
