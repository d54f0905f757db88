"""Which images run on each simulated node: for breakage that depends on a node's other pods.

A real driver that loads but misbehaves makes the node's later checks fail, not its own
pod. ``sim.sro.dev/broken-with: "<glob>"`` on a node says so for the simulator: while a
pod whose image matches the glob runs there (not being deleted), run-to-completion pods
on the node fail; once it is gone they succeed again. The simulator's pod watch keeps
this index; ``devsim`` asks it when it admits a pod.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from simcluster import inventory

BROKEN_WITH = f"{inventory.SIM}/broken-with"


class NodeImages:
    """Node -> pod uid -> the images of that live pod's containers."""

    def __init__(self) -> None:
        self.by_node: dict[str, dict[str, tuple[str, ...]]] = {}

    def clear(self) -> None:
        self.by_node.clear()

    def on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        node = spec.get("nodeName")
        if not node:
            return
        on_node = self.by_node.setdefault(node, {})
        if kind == "DELETED" or meta.get("deletionTimestamp"):
            on_node.pop(meta["uid"], None)
        else:
            on_node[meta["uid"]] = tuple(str(c.get("image", "")) for c in spec.get("containers") or ())

    def breaks(self, node: dict[str, Any]) -> bool:
        """Whether a pod matching the node's ``broken-with`` glob runs on it now."""
        meta = node.get("metadata") or {}
        pattern = (meta.get("annotations") or {}).get(BROKEN_WITH)
        if not pattern:
            return False
        running = self.by_node.get(str(meta.get("name", "")), {}).values()
        return any(fnmatch.fnmatchcase(image, pattern) for images in running for image in images)
