"""What the simulated kubelets are told: kwok's ``--config`` and the logs its containers print.

kwok runs every simulated node; its options say how many pods, nodes and Leases it moves
at once (``KWOK_OPTIONS``), its Stages (``hack/kwok/stages``) how pods and nodes move, and
a ClusterLogs what ``kubectl logs`` returns for a pod no one gave a log of its own
(``default_log_lines``). Logs are served in the CRI format (``cri_line``).
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import yaml

from simcluster import layout


def cri_line(text: str, *, stream: str = "stdout") -> str:
    """One line in the CRI log format kwok serves (plain text is refused)."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{now} {stream} F {text}\n"


def build_output(size: int, *, prefix: str = "CC [M]") -> list[str]:
    """About ``size`` bytes of compiler-like output, as real containers print while they
    build or unpack, so anything reading a log meets it at realistic length."""
    lines: list[str] = []
    total = 0
    while total < size:
        line = f"  {prefix}  /usr/src/module/src/part{len(lines):05d}.o -O2 -Wall -fno-strict-aliasing"
        lines.append(line)
        total += len(line) + 1
    return lines


def default_log_lines() -> list[str]:
    """What every simulated container prints unless told otherwise: tens of KiB of build
    output, a line saying it runs, and more after. It matches no recipe's ready line:
    a recipe waiting for a line its image does not print must wait, here as on a node."""
    return [
        *build_output(32 * 1024),
        "simulated container running",
        *build_output(2 * 1024, prefix="LD"),
    ]


KWOK_OPTIONS = {
    "podPlayStageParallelism": 16,
    "nodePlayStageParallelism": 8,
    "nodeLeaseParallelism": 16,
    # kwok applies its own defaults only when its --config holds no KwokConfiguration, so
    # every other default is written out: without the first, the node server answers 405
    # to every log read (a kubelet with its debugging handlers off).
    "enableDebuggingHandlers": True,
    "enableProfilingHandler": True,
    "enableContentionProfiling": False,
    "experimentalEnableCNI": False,
}
"""kwok's options. It moves 16 pods, 8 nodes and 16 Leases at once: real kubelets work
each on its own node, all at the same time, and kwok's defaults (4 of each) queue the
whole fleet's pod starts and heartbeats behind four requests in flight. At 5,000 nodes
that queue, not any node's own work, held pods Pending for minutes, and Leases renewed
four at a time fall behind under load (the node controller then marks healthy nodes
NotReady). Pull delays, crashes and slow builds are the Stages' and devsim's to simulate,
per pod."""


def write(run: layout.RunDir) -> Path:
    """kwok's --config: its options (``KWOK_OPTIONS``), the project's Stages and a
    ClusterLogs serving a default log to every pod."""
    run.kwok.mkdir(parents=True, exist_ok=True)
    default_log = run.kwok / "default.log"
    default_log.write_text("".join(cri_line(line) for line in default_log_lines()))
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokConfiguration",
            "options": dict(KWOK_OPTIONS),
        }
    ]
    for path in sorted(layout.KWOK_STAGES.glob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    docs.append(
        {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterLogs",
            "metadata": {"name": "sim-default-logs"},
            "spec": {"selector": {}, "logs": [{"logsFile": str(default_log), "follow": False}]},
        }
    )
    out = run.kwok / "kwok.yaml"
    out.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return out
