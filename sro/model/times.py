"""Reading the times the API server writes (RFC 3339, ``Z`` for UTC).

Objects come from users, so a timestamp may be missing, malformed or without a zone;
every decision that reads one (how old a pod is, how long a namespace has been going)
needs the same answer for all three: no time.
"""

from __future__ import annotations

from datetime import datetime


def parse(text: str) -> datetime | None:
    """The aware time ``text`` names, or None when it names none (empty, malformed, no zone)."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else None
