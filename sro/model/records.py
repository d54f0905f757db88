"""Reading the JSON records sro keeps in node annotations, whoever wrote them last.

Anyone allowed to edit a node may write these annotations, so a record may be anything:
not JSON, JSON of another shape, or nested past the decoder's depth, where ``json.loads``
raises ``RecursionError`` rather than ``ValueError``. ``loads`` reads every such text as
None, so no record can raise out of the planner (on a pass of every selected node, or of
teardown, which would then never end).

The planner asks for the same record of every selected node on every pass, and nodes
mostly carry one of a few texts, so ``short_cached`` keeps a parser's answers for short
texts; a long one is parsed each time, as an unbounded text must not stay in memory.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def loads(text: str) -> Any | None:
    """``text`` decoded, or None when it is not JSON the decoder can read."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def short_cached(parse: Callable[[str], T], *, longest: int, size: int) -> Callable[[str], T]:
    """``parse``, with the answers for texts up to ``longest`` characters kept (the
    ``size`` most recently used)."""
    kept = functools.lru_cache(maxsize=size)(parse)

    def parsed(text: str) -> T:
        return kept(text) if len(text) <= longest else parse(text)

    return parsed
