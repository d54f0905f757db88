"""The series published per SpecialResource: its conditions and where its nodes stand.

Unlike every other series, these come and go with the objects they describe: a condition
whose reason changed, a state gone from the recipe or a deleted SpecialResource must not
leave a stale series behind, or an alert on it would fire for something that no longer
exists. So this class remembers what it published for each SpecialResource and removes
what a new status no longer has. ``sro.observe.metrics.Metrics`` holds one, in its own
registry, and publishes into it after each status write.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Gauge

from sro.plan import upgrade_records

PHASES = ("Pending", "Progressing", "Complete", "Failed")
"""The phases of a state on a node (``sro.model.progress.Phase``), each published per state."""
UPGRADE_PHASES = (*upgrade_records.PHASES, "skipped")
"""Phases of a node in a driver upgrade (``sro.plan.upgrade``), each published per SpecialResource."""
NODE_KINDS = ("selected", "complete")
"""The counts of ``status.nodes`` published as ``sro_specialresource_nodes``."""


class SpecialResourceSeries:
    """The per-SpecialResource gauges of one registry and what each SpecialResource has in them."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.condition = Gauge(
            "sro_specialresource_condition",
            "1 while the SpecialResource's condition of this type is True with this reason, else 0",
            ["name", "type", "reason"],
            registry=r,
        )
        self.nodes = Gauge(
            "sro_specialresource_nodes",
            "Nodes a SpecialResource selects, and on how many every state is complete",
            ["name", "kind"],
            registry=r,
        )
        self.state_nodes = Gauge(
            "sro_specialresource_state_nodes",
            "Selected nodes on which a state of a SpecialResource is in this phase",
            ["name", "state", "phase"],
            registry=r,
        )
        self.upgrade_nodes = Gauge(
            "sro_specialresource_upgrade_nodes",
            "Selected nodes in each phase of a SpecialResource's driver upgrade (status.upgrade.nodes)",
            ["name", "phase"],
            registry=r,
        )
        self._conditions: dict[str, set[tuple[str, str]]] = {}
        self._states: dict[str, set[str]] = {}

    def publish(
        self,
        *,
        name: str,
        status: Mapping[str, Any],
        state_nodes: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        """Publish a SpecialResource's conditions and node counts from its status body, and
        ``state_nodes`` (state -> phase -> nodes, from the last walk) when given."""
        conditions: Sequence[Mapping[str, Any]] = status.get("conditions") or ()
        series = {(str(c.get("type", "")), str(c.get("reason", ""))) for c in conditions}
        for stale in self._conditions.get(name, set()) - series:
            self.condition.remove(name, *stale)
        for c in conditions:
            kind, reason = str(c.get("type", "")), str(c.get("reason", ""))
            self.condition.labels(name=name, type=kind, reason=reason).set(
                1.0 if c.get("status") == "True" else 0.0
            )
        self._conditions[name] = series
        nodes: Mapping[str, Any] = status.get("nodes") or {}
        for kind in NODE_KINDS:
            self.nodes.labels(name=name, kind=kind).set(float(nodes.get(kind, 0) or 0))
        if state_nodes is not None:
            self._publish_states(name, state_nodes)
        upgrade: Mapping[str, Any] = status.get("upgrade") or {}
        counts: Mapping[str, Any] = upgrade.get("nodes") or {}
        for phase in UPGRADE_PHASES:
            self.upgrade_nodes.labels(name=name, phase=phase).set(float(counts.get(phase, 0) or 0))

    def forget(self, *, name: str) -> None:
        """Drop every series of a SpecialResource that no longer exists."""
        for stale in self._conditions.pop(name, set()):
            self.condition.remove(name, *stale)
        for kind in NODE_KINDS:
            with contextlib.suppress(KeyError):
                self.nodes.remove(name, kind)
        self._publish_states(name, {})
        self._states.pop(name, None)
        for phase in UPGRADE_PHASES:
            with contextlib.suppress(KeyError):
                self.upgrade_nodes.remove(name, phase)

    def _publish_states(self, name: str, counts: Mapping[str, Mapping[str, int]]) -> None:
        for gone in self._states.get(name, set()) - set(counts):
            for phase in PHASES:
                self.state_nodes.remove(name, gone, phase)
        for state, phases in counts.items():
            for phase in PHASES:
                self.state_nodes.labels(name=name, state=state, phase=phase).set(phases.get(phase, 0))
        self._states[name] = set(counts)
