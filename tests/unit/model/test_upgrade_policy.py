"""spec.upgradePolicy as sro reads it: the CRD's defaults when fields are left out, every
bound checked again, and maxUnavailable turned into a node count. What the planner does
with it is tests/unit/plan/test_upgrade.py's."""

from __future__ import annotations

from typing import Any

import pytest

from sro.model import specialresource, upgrade_policy

pytestmark = pytest.mark.unit


def _parse(value: Any) -> tuple[upgrade_policy.UpgradePolicy, list[str]]:
    problems: list[str] = []
    return upgrade_policy.parse(value, problems), problems


def test_an_absent_policy_is_the_crds_defaults() -> None:
    policy, problems = _parse(None)
    assert problems == []
    assert policy == upgrade_policy.DEFAULT
    assert (policy.max_unavailable, policy.max_parallel, policy.max_failed_nodes) == ("25%", 1, 1)
    assert policy.auto_rollback and policy.drain.enable and policy.drain.timeout_seconds == 300
    assert not policy.drain.force and policy.wait_for_completion is None


def test_every_field_is_read() -> None:
    policy, problems = _parse(
        {
            "maxUnavailable": 3,
            "maxParallel": 5,
            "drain": {"enable": False, "timeoutSeconds": 60, "podSelector": {"app": "x"}, "force": True},
            "waitForCompletion": {"podSelector": {"job": "train"}, "timeoutSeconds": 600},
            "autoRollback": False,
            "maxFailedNodes": 2,
        }
    )
    assert problems == []
    assert (policy.max_unavailable, policy.max_parallel, policy.max_failed_nodes) == ("3", 5, 2)
    assert not policy.auto_rollback and not policy.drain.enable and policy.drain.force
    assert dict(policy.drain.pod_selector) == {"app": "x"}
    assert policy.wait_for_completion is not None and policy.wait_for_completion.timeout_seconds == 600


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"maxUnavailable": "0%"}, "maxUnavailable"),
        ({"maxUnavailable": 0}, "maxUnavailable"),
        ({"maxUnavailable": "ten"}, "maxUnavailable"),
        ({"maxParallel": 0}, "maxParallel"),
        ({"maxFailedNodes": True}, "maxFailedNodes"),
        ({"drain": {"timeoutSeconds": 0}}, "drain.timeoutSeconds"),
        ({"drain": {"podSelector": {"bad key!": "x"}}}, "drain.podSelector"),
        ({"autoRollback": "yes"}, "autoRollback"),
        ({"surge": 1}, "unknown spec.upgradePolicy fields"),
        ([], "must be a mapping"),
    ],
)
def test_a_bad_value_is_named(value: Any, expected: str) -> None:
    _, problems = _parse(value)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(
    ("max_unavailable", "selected", "budget"),
    [("10%", 100, 10), ("10%", 1000, 100), ("25%", 3, 1), ("10%", 5, 1), ("100%", 7, 7), ("4", 100, 4)],
)
def test_max_unavailable_is_a_node_count_of_at_least_one(
    max_unavailable: str, selected: int, budget: int
) -> None:
    policy = upgrade_policy.UpgradePolicy(max_unavailable=max_unavailable)
    assert policy.unavailable_budget(selected) == budget


def test_the_specialresource_carries_its_policy_and_refuses_a_bad_one() -> None:
    body = {
        "metadata": {"name": "gpu"},
        "spec": {"upgradePolicy": {"maxParallel": 5, "maxUnavailable": "10%"}},
    }
    sr = specialresource.parse(body)
    assert sr.spec.upgrade_policy.max_parallel == 5
    assert specialresource.parse({"metadata": {"name": "gpu"}}).spec.upgrade_policy == upgrade_policy.DEFAULT
    with pytest.raises(specialresource.SpecialResourceInvalid, match="maxParallel"):
        specialresource.parse({"metadata": {"name": "gpu"}, "spec": {"upgradePolicy": {"maxParallel": -1}}})
