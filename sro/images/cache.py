"""Answers kept for a while, so a reconcile per node does not become a registry request per node.

Every reconcile of a SpecialResource asks about the same few images; without a cache,
20 nodes changing kernel would be 20 identical requests to a registry that may rate-limit
sro (Docker Hub does). How long an answer is kept depends on what it says
(``Policy.ttl``): an existing image's digest for minutes (a tag rarely moves, and a moved
tag is caught within the TTL); a missing image briefly, since a push or a build is
expected to make it appear and the group should proceed soon after; an unreachable
registry more briefly still, only to absorb bursts. The cache is bounded: past
``max_entries`` the least recently used answer goes. The clock is injected, so tests
step time instead of sleeping.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from sro.images import answers

Key = tuple[str, str]  # (the image as asked, the credential's fingerprint or "")


@dataclass(frozen=True, kw_only=True)
class Policy:
    exists_ttl: float = 300.0
    """A digest is trusted for 5 minutes: a tag pushed over is seen within that."""
    missing_ttl: float = 30.0
    """A missing (or refused) image is asked again after 30 s: a group waiting on a push
    proceeds within that of the push."""
    unreachable_ttl: float = 10.0
    """An unreachable registry is asked again after 10 s: long enough to spare a failing
    registry a request per node, short enough that recovery is seen quickly."""
    max_entries: int = 4096
    """Images times credentials kept; a few hundred bytes each."""

    def ttl(self, answer: answers.Answer) -> float:
        if answer.outcome is answers.Outcome.EXISTS:
            return self.exists_ttl
        if answer.outcome in (answers.Outcome.MISSING, answers.Outcome.UNAUTHORIZED):
            return self.missing_ttl
        if answer.outcome is answers.Outcome.INVALID:
            return self.exists_ttl  # a reference's text does not change
        return self.unreachable_ttl


class AnswerCache:
    """The answers of ``Policy`` age, least recently used first out when full."""

    def __init__(self, policy: Policy, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy
        self._clock = clock
        self._entries: OrderedDict[Key, tuple[float, answers.Answer]] = OrderedDict()

    def get(self, key: Key) -> answers.Answer | None:
        found = self._entries.get(key)
        if found is None:
            return None
        expires, answer = found
        if self._clock() >= expires:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return answer

    def put(self, key: Key, answer: answers.Answer) -> None:
        ttl = self.policy.ttl(answer)
        if ttl <= 0:
            return
        self._entries[key] = (self._clock() + ttl, answer)
        self._entries.move_to_end(key)
        while len(self._entries) > self.policy.max_entries:
            self._entries.popitem(last=False)

    def forget(self, image: str) -> None:
        """Drop every answer about ``image`` (e.g. after sro itself pushed it)."""
        for key in [k for k in self._entries if k[0] == image]:
            del self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)
