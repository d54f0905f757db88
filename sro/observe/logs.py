"""Structured logs: JSON in a pod, readable on a terminal, the reconcile's key on every line.

``configure`` sets up structlog once per process. ``bind_reconcile`` puts the key,
the SpecialResource and a reconcile id into structlog's context variables, so every
line logged anywhere during that reconcile (planner, apply, status) carries them
without being passed around; asyncio copies the context per task, so concurrent
workers never see each other's keys.
"""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import structlog

_ids = itertools.count(1)


def configure(*, format: str = "auto", level: str = "info") -> None:
    """``format``: json, console or auto (console on a TTY, JSON otherwise)."""
    use_json = format == "json" or (format == "auto" and not sys.stderr.isatty())
    renderer: Any = structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info if use_json else structlog.processors.StackInfoRenderer(),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelNamesMapping()[level.upper()]),
        # sys.stderr is looked up per logger, not captured now: it may be replaced later.
        logger_factory=lambda *_: structlog.PrintLogger(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


@contextmanager
def bind_reconcile(key: str, *, sr: str | None = None) -> Iterator[int]:
    """Bind key, SpecialResource and a fresh reconcile id for the enclosed block."""
    reconcile_id = next(_ids)
    tokens = structlog.contextvars.bind_contextvars(
        key=key, sr=sr if sr is not None else key, reconcile=reconcile_id
    )
    try:
        yield reconcile_id
    finally:
        structlog.contextvars.reset_contextvars(**tokens)
