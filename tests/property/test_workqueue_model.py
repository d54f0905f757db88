"""The work queue against a tiny reference model, under random interleavings.

A Hypothesis state machine drives adds, delayed adds, rate-limited adds, gets,
dones, clock steps, forgets and shutdown, and checks after every step that the
queue agrees with a model written as plainly as possible: a key is never held by
two workers; an add during processing yields exactly one more pass; bursts
collapse; the earliest ``add_after`` wins; ``forget`` resets the backoff; after
shutdown nothing is handed out. A second machine runs the same rules on a paced queue: a
key's add during its rest after a pass that was added to often enough while it ran
waits for the rest's end.
"""

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sro.queue import clock, ratelimit, workqueue

pytestmark = pytest.mark.unit

KEYS = st.sampled_from(["a", "b", "c", "d"])
BASE = 0.005
CAP = 0.08


class Model:
    """The queue's contract, written as plainly as possible."""

    def __init__(self) -> None:
        self.order: list[str] = []  # keys ready, in order
        self.dirty: set[str] = set()
        self.processing: set[str] = set()
        self.waiting: dict[str, tuple[float, int]] = {}  # key -> (ready time, when set)
        self.seq = 0
        self.failures: dict[str, int] = {}
        self.shut = False
        self.started: dict[str, float] = {}
        self.resting: dict[str, float] = {}  # key -> end of its rest (paced queues)
        self.adds_during: dict[str, int] = {}  # key -> adds while its pass runs

    def added(self, key: str) -> None:
        """Any add of ``key`` (a direct one or a delayed one whose time came)."""
        if not self.shut and key in self.processing:
            self.adds_during[key] = self.adds_during.get(key, 0) + 1

    def park(self, key: str, at: float) -> None:
        current = self.waiting.get(key)
        if current is None or at < current[0]:
            self.seq += 1
            self.waiting[key] = (at, self.seq)

    def add(self, key: str, *, now: float) -> None:
        if self.shut or key in self.dirty:
            return
        if key not in self.processing and self.resting.get(key, 0.0) > now:
            self.park(key, self.resting[key])
            return
        self.dirty.add(key)
        if key not in self.processing:
            self.order.append(key)


class QueueMachine(RuleBasedStateMachine):
    PACE = 1.0
    REST_CAP = 0.0
    BUSY = 0

    def __init__(self) -> None:
        super().__init__()
        self.clock = clock.ManualClock()
        self.queue: workqueue.WorkQueue[str] = workqueue.WorkQueue(
            clock=self.clock,
            limiter=ratelimit.ExponentialBackoff(base=BASE, cap=CAP),
            pace=self.PACE,
            rest_cap=self.REST_CAP,
            busy=self.BUSY,
        )
        self.model = Model()
        self.held: list[str] = []  # keys held by workers, in get order

    def _promote(self) -> None:
        now = self.clock.now()
        for key, (at, _) in sorted(self.model.waiting.items(), key=lambda kv: kv[1]):
            if at <= now:
                del self.model.waiting[key]
                self.model.added(key)
                self.model.add(key, now=now)

    def _park(self, key: str, at: float) -> None:
        self.model.park(key, at)

    @rule(key=KEYS)
    def add(self, key: str) -> None:
        self.queue.add(key)
        self.model.added(key)
        self.model.add(key, now=self.clock.now())

    @rule(key=KEYS, delay=st.sampled_from([0.0, 0.01, 0.02, 0.05]))
    def add_after(self, key: str, delay: float) -> None:
        self.queue.add_after(key, delay)
        if self.model.shut:
            return
        if delay <= 0:
            self.model.added(key)
            self.model.add(key, now=self.clock.now())
            return
        self._park(key, self.clock.now() + delay)

    @rule(key=KEYS)
    def add_rate_limited(self, key: str) -> None:
        failures = self.model.failures.get(key, 0)
        self.model.failures[key] = failures + 1
        expected = min(BASE * 2**failures, CAP)
        self.queue.add_rate_limited(key)
        if not self.model.shut:
            self._park(key, self.clock.now() + expected)
            assert self.queue.ready_at(key) == pytest.approx(self.model.waiting[key][0])

    @rule(key=KEYS)
    def forget(self, key: str) -> None:
        self.queue.forget(key)
        self.model.failures.pop(key, None)
        assert self.queue.num_requeues(key) == 0

    @rule(step=st.sampled_from([0.001, 0.01, 0.03, 0.1]))
    def advance(self, step: float) -> None:
        self.clock.advance(step)

    @rule()
    def get(self) -> None:
        got = self.queue.try_get()
        if not self.model.shut:
            self._promote()
        expected = None
        if self.model.order and not self.model.shut:
            expected = self.model.order.pop(0)
            self.model.dirty.discard(expected)
            self.model.processing.add(expected)
            self.model.started[expected] = self.clock.now()
        assert got == expected
        if got is not None:
            assert got not in self.held, "a key was handed to two workers"
            self.held.append(got)

    @precondition(lambda self: bool(self.held))
    @rule(index=st.integers(min_value=0, max_value=10))
    def done(self, index: int) -> None:
        key = self.held.pop(index % len(self.held))
        self.queue.done(key)
        now = self.clock.now()
        self.model.processing.discard(key)
        rest = min((self.PACE - 1.0) * (now - self.model.started.pop(key)), self.REST_CAP)
        busy = self.model.adds_during.pop(key, 0) >= self.BUSY
        if rest > 0 and busy:
            self.model.resting[key] = now + rest
        if key in self.model.dirty and not self.model.shut:
            self.model.dirty.discard(key)
            self.model.add(key, now=now)

    @rule()
    def shutdown(self) -> None:
        self.queue.shutdown()
        self.model.shut = True
        self.model.order.clear()
        self.model.dirty.clear()
        self.model.waiting.clear()
        self.model.resting.clear()
        self.model.adds_during.clear()

    @invariant()
    def agrees_with_the_model(self) -> None:
        assert len(self.queue) == len(self.model.order)
        assert self.queue.waiting == len(self.model.waiting)
        assert self.queue.processing == frozenset(self.model.processing)
        assert set(self.held) == self.model.processing


QueueMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=60, deadline=None)
test_the_queue_behaves_like_its_reference_model = QueueMachine.TestCase


class PacedQueueMachine(QueueMachine):
    PACE = 3.0
    REST_CAP = 0.05
    BUSY = 2  # passes with fewer adds go on at once, the others rest


PacedQueueMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=60, deadline=None)
test_a_paced_queue_behaves_like_its_reference_model = PacedQueueMachine.TestCase
