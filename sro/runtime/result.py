"""What a reconcile returns, and the one policy that turns outcomes into queue actions.

A reconcile either finishes (``DONE``), asks to run again after a while
(``Result(requeue_after=s)``: polling something the watches cannot see), raises
(retry with per-key backoff), or raises ``sro.errors.Terminal`` (retrying cannot help:
count it, do not requeue). There is deliberately no boolean "requeue" flag.
``decide`` is the single place this policy lives (controller-runtime's
``reconcileHandler``); it is pure so each branch has a unit test.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from sro import errors


@dataclass(frozen=True, kw_only=True)
class Result:
    requeue_after: float | None = None
    cost: float | None = None
    """Seconds the pass spent computing (reading caches, rendering, planning), not waiting
    on answers: what the queue's pace rests by (``sro.queue.workqueue``, **Paced**); None:
    the whole pass."""

    def __post_init__(self) -> None:
        if self.requeue_after is not None and self.requeue_after < 0:
            raise ValueError("requeue_after must not be negative")
        if self.cost is not None and self.cost < 0:
            raise ValueError("cost must not be negative")


DONE = Result()


def requeue_after(seconds: float) -> Result:
    return Result(requeue_after=seconds)


class Action(enum.Enum):
    FORGET = "forget"  # success: reset the key's backoff
    REQUEUE_AFTER = "requeue_after"  # forget, then add_after(delay)
    RETRY = "retry"  # add_rate_limited
    DROP = "drop"  # forget, no requeue (terminal)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    label: str  # the sro_reconcile_total{result} value
    action: Action
    delay: float = 0.0


def decide(result: Result | BaseException) -> Outcome:
    """The queue action and metric label for what a reconcile returned or raised."""
    if isinstance(result, errors.Terminal):
        return Outcome(label="terminal", action=Action.DROP)
    if isinstance(result, TimeoutError):
        return Outcome(label="timeout", action=Action.RETRY)
    if isinstance(result, BaseException):
        return Outcome(label="error", action=Action.RETRY)
    if result.requeue_after is not None:
        return Outcome(label="requeue_after", action=Action.REQUEUE_AFTER, delay=result.requeue_after)
    return Outcome(label="success", action=Action.FORGET)
