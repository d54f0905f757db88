"""Each step of a node's chain of states while sro converges, split by who took the time.

The floor has no chain; sro has one per node, and how long it takes is what sro's order
costs. Each state on each node is three intervals, timed from outside by when the bench's
watches saw things:

* **opened**: from the label of the state it comes after on that node (the last of them
  when it comes after several) to its pod appearing: sro's apply of a per-node pod, or the
  DaemonSet controller's reaction to the label for a DaemonSet's pod;
* **ran**: from the pod appearing to it being done (Ready; Succeeded for a validation;
  for a driver that builds, the end of its build, when its ready line appears): the
  scheduler and the simulated node;
* **recorded**: from the pod done to sro's label for the state on the node: sro noticing
  (and, for ``wait-for-logs``, reading the log) and patching the node.

*opened* of a per-node pod and *recorded* are sro's own reaction; the issue's "a node
whose state completes sees its next state's write within a fraction of a second" is
*recorded*. The first pod seen and the first time done count, so a pod made again (a
reset) does not move a step already taken. The bench's watches share the machine with
what they time, so each figure is at most as late as the bench saw it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simcluster import converge_pods, converge_report

Key = tuple[str, str]  # (node, state)


def summary(values: Sequence[float]) -> dict[str, float]:
    """p50, p99 and the largest of ``values`` (and how many), in seconds."""
    if not values:
        return {"count": 0}
    return {
        "count": len(values),
        "p50": converge_report.percentile(values, 50),
        "p99": converge_report.percentile(values, 99),
        "max": max(values),
    }


@dataclass
class Steps:
    """When each (node, state) pod was first seen and first done, and when its label first
    appeared; ``after``: each state's predecessors (``converge.states_after``)."""

    after: Mapping[str, Sequence[str]]
    clock: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    seen: dict[Key, float] = field(default_factory=dict)
    done: dict[Key, float] = field(default_factory=dict)
    labelled: dict[Key, float] = field(default_factory=dict)

    def on_pod(self, kind: str, pod: Mapping[str, Any]) -> None:
        if kind == "DELETED":
            return
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        state = str(((pod.get("metadata") or {}).get("labels") or {}).get(converge_pods.STATE_LABEL) or "")
        if not node or state not in self.after:
            return
        now = self.clock()
        self.seen.setdefault((node, state), now)
        if converge_pods.pod_done(pod):
            # A driver is done when its build ends and its ready line appears, not when it
            # turns Ready (``pod_logs``): the time it builds is the chain's, not sro's.
            self.done.setdefault((node, state), now + converge_pods.build_left(pod, wall=self.wall()))

    def on_label(self, node: str, state: str) -> None:
        self.labelled.setdefault((node, state), self.clock())

    def figures(self) -> dict[str, dict[str, dict[str, float]]]:
        """Per state: ``opened``, ``ran`` and ``recorded`` (see the module docstring) over
        the nodes where both ends were seen; ``all`` pools every state's."""
        out: dict[str, dict[str, dict[str, float]]] = {}
        pooled: dict[str, list[float]] = {"opened": [], "ran": [], "recorded": []}
        for state, before in self.after.items():
            parts: dict[str, list[float]] = {"opened": [], "ran": [], "recorded": []}
            for (node, s), seen in self.seen.items():
                if s != state:
                    continue
                opened_by = [self.labelled.get((node, p)) for p in before]
                if before and all(t is not None for t in opened_by):
                    parts["opened"].append(max(0.0, seen - max(t for t in opened_by if t is not None)))
                done = self.done.get((node, state))
                if done is not None:
                    parts["ran"].append(done - seen)
                    label = self.labelled.get((node, state))
                    if label is not None:
                        parts["recorded"].append(max(0.0, label - done))
            if any(parts.values()):
                out[state] = {k: summary(v) for k, v in parts.items()}
                for k, v in parts.items():
                    pooled[k] += v
        out["all"] = {k: summary(v) for k, v in pooled.items()}
        return out
