"""Properties of condition merging and retry timing, over random sequences.

* A condition's ``lastTransitionTime`` changes exactly when its status flips (or it first
  appears), whatever the reasons and messages do meanwhile.
* A failed pod is never deleted before its backoff has passed since its failure was first
  seen, and while it waits, ``requeue_after`` is positive and no later than the due time.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sro.errors import Location
from sro.model import desired, views
from sro.plan import live_records, observed, planner, pod_retries
from sro.status import conditions

pytestmark = pytest.mark.unit

T0 = datetime(2026, 11, 22, tzinfo=UTC)
STEP = st.tuples(
    st.sampled_from(conditions.ORDER),
    st.booleans(),
    st.sampled_from(["A", "B", "C"]),
    st.integers(min_value=1, max_value=600),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=30))
def test_transition_time_moves_exactly_when_a_status_flips(steps: list) -> None:
    current: list[dict] = []
    now = T0
    for kind, status, reason, seconds in steps:
        now += timedelta(seconds=seconds)
        before = {c["type"]: c for c in current}
        others = [
            conditions.Condition(type=c["type"], status=c["status"] == "True", reason=c["reason"])
            for c in current
            if c["type"] != kind
        ]
        wanted = [*others, conditions.Condition(type=kind, status=status, reason=reason)]
        current = conditions.merge(current, wanted, generation=1, now=now)
        after = {c["type"]: c for c in current}
        for name, cond in after.items():
            old = before.get(name)
            flipped = old is None or old["status"] != cond["status"]
            expected = conditions.timestamp(now) if flipped else old["lastTransitionTime"]
            assert cond["lastTransitionTime"] == expected
        assert [c["type"] for c in current] == [t for t in conditions.ORDER if t in after]


def _pod_world(
    *, failed_uid: str, record: observed.Retry | None
) -> tuple[desired.DesiredState, observed.Observed]:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "check-n1", "namespace": "ns"}}
    pod_obj = desired.DesiredObject(body=body, state="s", source=Location(file="s/p.yaml"), node="n1")
    wanted = desired.DesiredState(
        sr_name="acc",
        namespace="ns",
        recipe="r",
        states=(desired.StateSpec(name="s"),),
        objects=(pod_obj,),
        nodes=("n1",),
        kernel_groups={},
    )
    pod = views.PodView(namespace="ns", name="check-n1", uid=failed_uid, node="n1", phase="Failed")
    seen = observed.Observed(
        generation=1,
        nodes={"n1": views.NodeView(name="n1")},
        objects={pod_obj.ref: live_records.LiveObject(ref=pod_obj.ref, uid=failed_uid)},
        pods=(pod,),
        retries={pod_obj.ref: record} if record else {},
    )
    return wanted, seen


@settings(max_examples=300, deadline=None)
@given(
    attempts=st.integers(min_value=1, max_value=12),
    age=st.integers(min_value=0, max_value=900),
    same_pod=st.booleans(),
)
def test_a_failed_pod_is_deleted_only_after_its_backoff(attempts: int, age: int, same_pod: bool) -> None:
    seen_at = T0
    record = observed.Retry(pod_uid="p1" if same_pod else "p0", failed_at=seen_at, attempts=attempts)
    wanted, seen = _pod_world(failed_uid="p1", record=record)
    now = seen_at + timedelta(seconds=age)
    result = planner.plan(wanted, seen, now=now)
    kept = next(iter(result.retries.values()))
    due = kept.failed_at + pod_retries.backoff(kept.attempts)
    assert kept.attempts == (attempts if same_pod else attempts + 1)
    if result.delete:
        assert now >= due
        assert result.delete[0].uid == "p1"
    else:
        assert now < due
        assert result.requeue_after is not None
        assert 0 < result.requeue_after <= (due - now).total_seconds()
