"""The SpecialResource's ``spec.upgradePolicy``: how fast and how safely driver pods change.

A driver's pod cannot be replaced under running workloads without taking the node's
accelerator away from them, so sro (not the DaemonSet controller) replaces the pods of
its ``OnDelete`` DaemonSets node by node (``sro.plan.upgrade``). This value says how many
nodes may be out at once, how a node is emptied first, and what happens when nodes fail.
It lives in the model because the SpecialResource's parser and the planner both read it;
the defaults are the CRD's, repeated here so a body written without them (an older CRD,
``sro lint`` on a file) means the same.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sro.model import names

PERCENT = re.compile(r"^(100|[1-9]?[0-9])%$")
PARALLEL_MAX = 1000
"""Most nodes one rollout may walk at once (a larger value is a typo, not a plan)."""
DRAIN_TIMEOUT_MAX = 86_400
FAILED_MAX = 1000
SELECTOR_MAX = 16


@dataclass(frozen=True, kw_only=True)
class Drain:
    """``spec.upgradePolicy.drain``: how a node is emptied before its driver pod goes.

    Pods are evicted through the Eviction API, so PodDisruptionBudgets hold; DaemonSet
    pods, mirror pods and sro's own operand pods are never evicted. ``pod_selector``
    (labels every evicted pod must carry; empty: every other pod) narrows it;
    ``delete_empty_dir_data`` allows evicting pods with emptyDir volumes; ``force``
    deletes, after the timeout, what eviction could not move (never otherwise)."""

    enable: bool = True
    timeout_seconds: int = 300
    pod_selector: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    delete_empty_dir_data: bool = False
    force: bool = False


@dataclass(frozen=True, kw_only=True)
class WaitForCompletion:
    """``spec.upgradePolicy.waitForCompletion``: pods (by labels) that must finish on a
    node before it is drained (an empty selector: none); ``timeout_seconds`` 0 waits as
    long as they run (``sro.plan.upgrade_jobs``)."""

    pod_selector: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    timeout_seconds: int = 0


@dataclass(frozen=True, kw_only=True)
class UpgradePolicy:
    """``spec.upgradePolicy`` with every default filled in."""

    max_unavailable: str = "25%"
    max_parallel: int = 1
    drain: Drain = Drain()
    wait_for_completion: WaitForCompletion | None = None
    auto_rollback: bool = True  # a halted rollout puts its failed nodes back (sro.plan.upgrade_rollback)
    max_failed_nodes: int = 1

    def unavailable_budget(self, selected: int) -> int:
        """``max_unavailable`` as a node count for ``selected`` nodes: a percentage rounds
        down (as a Deployment's does) but is at least 1, so a rollout always moves."""
        text = self.max_unavailable
        if text.endswith("%"):
            return max(1, math.floor(selected * int(text[:-1]) / 100))
        return max(1, int(text))


DEFAULT = UpgradePolicy()


def _int(value: Any, *, at: str, low: int, high: int, default: int, problems: list[str]) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        problems.append(f"{at} must be an integer from {low} to {high}")
        return default
    return value


def _bool(value: Any, *, at: str, default: bool, problems: list[str]) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        problems.append(f"{at} must be true or false")
        return default
    return value


def _selector(value: Any, *, at: str, problems: list[str]) -> Mapping[str, str]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping) or len(value) > SELECTOR_MAX:
        problems.append(f"{at} must be a mapping of at most {SELECTOR_MAX} labels")
        return MappingProxyType({})
    out: dict[str, str] = {}
    for key, val in value.items():
        key_s, val_s = str(key), "" if val is None else str(val)
        if problem := names.label_key_problem(key_s):
            problems.append(f"{at} key {key_s!r}: {problem}")
        if problem := names.label_value_problem(val_s):
            problems.append(f"{at}[{key_s!r}] value {val_s!r}: {problem}")
        out[key_s] = val_s
    return MappingProxyType(out)


def _unknown(value: Mapping[str, Any], known: set[str], *, at: str, problems: list[str]) -> None:
    unknown = set(value) - known
    if unknown:
        problems.append(f"unknown {at} fields {sorted(map(str, unknown))}")


def _max_unavailable(value: Any, problems: list[str]) -> str:
    at = "spec.upgradePolicy.maxUnavailable"
    if value is None:
        return DEFAULT.max_unavailable
    if isinstance(value, int) and not isinstance(value, bool):
        if 1 <= value <= 100_000:
            return str(value)
    elif isinstance(value, str) and PERCENT.match(value) and value != "0%":
        return value
    problems.append(f"{at} must be a node count of at least 1 or a percentage from 1% to 100%")
    return DEFAULT.max_unavailable


def _drain(value: Any, problems: list[str]) -> Drain:
    at = "spec.upgradePolicy.drain"
    if value is None:
        return Drain()
    if not isinstance(value, Mapping):
        problems.append(f"{at} must be a mapping")
        return Drain()
    _unknown(
        value,
        {"enable", "timeoutSeconds", "podSelector", "deleteEmptyDirData", "force"},
        at=at,
        problems=problems,
    )
    return Drain(
        enable=_bool(value.get("enable"), at=f"{at}.enable", default=True, problems=problems),
        timeout_seconds=_int(
            value.get("timeoutSeconds"),
            at=f"{at}.timeoutSeconds",
            low=1,
            high=DRAIN_TIMEOUT_MAX,
            default=300,
            problems=problems,
        ),
        pod_selector=_selector(value.get("podSelector"), at=f"{at}.podSelector", problems=problems),
        delete_empty_dir_data=_bool(
            value.get("deleteEmptyDirData"), at=f"{at}.deleteEmptyDirData", default=False, problems=problems
        ),
        force=_bool(value.get("force"), at=f"{at}.force", default=False, problems=problems),
    )


def _wait(value: Any, problems: list[str]) -> WaitForCompletion | None:
    at = "spec.upgradePolicy.waitForCompletion"
    if value is None:
        return None
    if not isinstance(value, Mapping):
        problems.append(f"{at} must be a mapping")
        return None
    _unknown(value, {"podSelector", "timeoutSeconds"}, at=at, problems=problems)
    return WaitForCompletion(
        pod_selector=_selector(value.get("podSelector"), at=f"{at}.podSelector", problems=problems),
        timeout_seconds=_int(
            value.get("timeoutSeconds"),
            at=f"{at}.timeoutSeconds",
            low=0,
            high=DRAIN_TIMEOUT_MAX,
            default=0,
            problems=problems,
        ),
    )


def parse(value: Any, problems: list[str]) -> UpgradePolicy:
    """``spec.upgradePolicy`` as an ``UpgradePolicy``; each problem is appended to ``problems``."""
    at = "spec.upgradePolicy"
    if value is None:
        return DEFAULT
    if not isinstance(value, Mapping):
        problems.append(f"{at} must be a mapping")
        return DEFAULT
    known = {"maxUnavailable", "maxParallel", "drain", "waitForCompletion", "autoRollback", "maxFailedNodes"}
    _unknown(value, known, at=at, problems=problems)
    return UpgradePolicy(
        max_unavailable=_max_unavailable(value.get("maxUnavailable"), problems),
        max_parallel=_int(
            value.get("maxParallel"),
            at=f"{at}.maxParallel",
            low=1,
            high=PARALLEL_MAX,
            default=1,
            problems=problems,
        ),
        drain=_drain(value.get("drain"), problems),
        wait_for_completion=_wait(value.get("waitForCompletion"), problems),
        auto_rollback=_bool(
            value.get("autoRollback"), at=f"{at}.autoRollback", default=True, problems=problems
        ),
        max_failed_nodes=_int(
            value.get("maxFailedNodes"),
            at=f"{at}.maxFailedNodes",
            low=1,
            high=FAILED_MAX,
            default=1,
            problems=problems,
        ),
    )
