"""One SpecialResource seen node by node: the rows and the text of ``sro status``.

The status subresource says how many nodes each state is complete on and names at most ten
failing nodes per state; an administrator with a thousand nodes also wants to see *which*
node stands where. The node labels sro writes (``<sr>.sro.dev/<state>: ready``,
``<sr>.sro.dev/complete``) and the kernel-group annotation (``sro.dev/kernel.<sr>``) say
exactly that, so a node's row is read from its metadata alone, and the status adds the
failing reasons and the summary. Nothing here does I/O: metadata and a status body in,
values and text out.

A node belongs to the SpecialResource's table when it matches the SpecialResource's own
``spec.nodeSelector`` (the nodes were listed by it), when sro has walked it (it carries
one of the labels or the kernel-group annotation, written with the first label) or when
the status names it (failing, or the node a state waits on).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sro.model import views
from sro.plan import lifecycle

READY = "ready"
FAILED = "failed"
PENDING = "-"
UPGRADE = "upgrade"
"""``<sr>.sro.dev/upgrade``: where a node is in a driver upgrade, when sro records that."""

Output = Literal["table", "wide", "json"]


@dataclass(frozen=True, kw_only=True)
class NodeMeta:
    """What a node's row needs: its name, labels and annotations (metadata only)."""

    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> NodeMeta:
        meta = body.get("metadata") or {}
        return cls(
            name=str(meta.get("name", "")),
            labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
            annotations={str(k): str(v) for k, v in (meta.get("annotations") or {}).items()},
        )


@dataclass(frozen=True, kw_only=True)
class Row:
    node: str
    kernel: str
    os: str
    states: tuple[str, ...]  # READY, FAILED or PENDING, in the status's state order
    complete: bool
    upgrade: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class Report:
    """One SpecialResource's table and summary."""

    name: str
    phase: str
    line: str
    states: tuple[str, ...]
    rows: tuple[Row, ...]
    summary: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "phase": self.phase,
            "state": self.line,
            "summary": self.summary,
            "states": list(self.states),
            "nodes": [
                {
                    "name": r.node,
                    "kernel": r.kernel,
                    "os": r.os,
                    "states": dict(zip(self.states, r.states, strict=True)),
                    "complete": r.complete,
                    "upgrade": r.upgrade,
                    "reason": r.reason,
                }
                for r in self.rows
            ],
        }


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _failing(states: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """(state, node) -> reason, from the rows' ``failingNodes``."""
    return {
        (str(row.get("name", "")), str(f.get("node", ""))): str(f.get("reason", ""))
        for row in states
        for f in row.get("failingNodes") or ()
    }


def _waiting(states: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """node -> the reason a state's message gives for it (``<node>: <reason> (and N more)``)."""
    found: dict[str, str] = {}
    for row in states:
        node, sep, rest = str(row.get("message", "")).partition(": ")
        if sep and row.get("phase") != "Failed":
            reason = rest.split(" (and ", 1)[0]
            found.setdefault(node, f"{row.get('name', '')}: {reason}")
    return found


def _held(status: Mapping[str, Any]) -> dict[str, str]:
    """node -> why it is held, from ``status.heldNodes`` (it lost labels; let go at ``until``)."""
    return {
        str(
            h.get("node", "")
        ): f"held until {h.get('until', '')}: lost {', '.join(h.get('missingLabels') or ())}"
        for h in status.get("heldNodes") or ()
    }


def build(sr: Mapping[str, Any], nodes: Iterable[NodeMeta], *, selected: bool = False) -> Report:
    """The report of SpecialResource ``sr`` (its whole body) over ``nodes`` (any nodes:
    those sro has not walked for it are left out, unless ``selected`` says every one of
    them matches its node selector: then a node that has earned no label yet has its row)."""
    name = str((sr.get("metadata") or {}).get("name", ""))
    status = sr.get("status") or {}
    rows_in: Sequence[Mapping[str, Any]] = status.get("states") or ()
    states = tuple(str(r.get("name", "")) for r in rows_in)
    prefix, annotation = lifecycle.label_prefix(name), lifecycle.kernel_annotation(name)
    failing = _failing(rows_in)
    failing_nodes = {node for _, node in failing}
    waiting = _waiting(rows_in)
    held = _held(status)
    rows = []
    for node in sorted(nodes, key=lambda n: n.name):
        ours = annotation in node.annotations or any(k.startswith(prefix) for k in node.labels)
        named = node.name in failing_nodes or node.name in waiting or node.name in held
        if not (ours or selected or named):
            continue
        cells = []
        reasons = []
        for state in states:
            if node.labels.get(prefix + state) == lifecycle.READY_VALUE:
                cells.append(READY)
            elif (state, node.name) in failing:
                cells.append(FAILED)
                reasons.append(f"{state}: {failing[state, node.name]}")
            else:
                cells.append(PENDING)
        kernel, _, os = node.annotations.get(annotation, "").partition("|")
        kernel = kernel or node.labels.get(views.KERNEL_LABEL, "")  # not walked yet: what NFD says
        complete = node.labels.get(prefix + lifecycle.COMPLETE) == lifecycle.COMPLETE_VALUE
        if not reasons and not complete and node.name in waiting:
            reasons.append(waiting[node.name])
        if node.name in held:
            reasons.append(held[node.name])
        rows.append(
            Row(
                node=node.name,
                kernel=kernel,
                os=os,
                states=tuple(cells),
                complete=complete,
                upgrade=node.labels.get(prefix + UPGRADE, ""),
                reason="; ".join(reasons),
            )
        )
    return Report(
        name=name,
        phase=str(status.get("phase", "")) or "Unknown",
        line=str(status.get("state", "")),
        states=states,
        rows=tuple(rows),
        summary=_summary(name, sr, status, rows),
    )


def _summary(name: str, sr: Mapping[str, Any], status: Mapping[str, Any], rows: Sequence[Row]) -> str:
    if not status:
        return f"{name}: no status yet (is the operator running?)"
    nodes = status.get("nodes") or {}
    selected, complete = int(nodes.get("selected", 0) or 0), int(nodes.get("complete", 0) or 0)
    failing = sum(1 for r in rows if FAILED in r.states)
    kernels = len(status.get("kernels") or ())
    parts = [f"{complete}/{selected} complete", f"{failing} failing", _plural(kernels, "kernel group")]
    upgrading = sum(1 for r in rows if r.upgrade)
    if upgrading:
        parts.append(f"{upgrading} upgrading")
    if status.get("heldNodes"):
        parts.append(f"{len(status['heldNodes'])} held")
    line = f"{name}: {status.get('state', '') or status.get('phase', '')} ({', '.join(parts)})"
    generation = int((sr.get("metadata") or {}).get("generation", 0) or 0)
    observed = int(status.get("observedGeneration", 0) or 0)
    if observed and generation and observed < generation:
        line += f" [status is of generation {observed}; the object is at {generation}]"
    return line


def _header(state: str, *, wide: bool) -> str:
    short = state if wide else state.removeprefix("state-")
    return short.upper()


def _columns(report: Report, *, wide: bool) -> tuple[list[str], list[list[str]]]:
    upgrades = wide or any(r.upgrade for r in report.rows)
    head = ["NODE", "KERNEL"] + (["OS"] if wide else [])
    head += [_header(s, wide=wide) for s in report.states] + ["COMPLETE"]
    head += ["UPGRADE"] if upgrades else []
    head += ["REASON"]
    body = []
    for r in report.rows:
        cells = [r.node, r.kernel or PENDING] + ([r.os or PENDING] if wide else [])
        cells += [*r.states, "true" if r.complete else PENDING]
        cells += [r.upgrade or PENDING] if upgrades else []
        cells += [r.reason]
        body.append(cells)
    return head, body


def format_text(report: Report, *, wide: bool = False) -> str:
    """The table (aligned columns, as ``kubectl get`` prints) and the summary line."""
    head, body = _columns(report, wide=wide)
    widths = [max(len(h), *(len(row[i]) for row in body)) if body else len(h) for i, h in enumerate(head)]
    lines = []
    for cells in [head, *body]:
        padded = [c.ljust(w) for c, w in zip(cells[:-1], widths[:-1], strict=True)]
        lines.append("   ".join([*padded, cells[-1]]).rstrip())
    if not body:
        lines = ["(no node walked for this SpecialResource yet)"]
    lines.append(report.summary)
    return "\n".join(lines) + "\n"


def format_reports(reports: Sequence[Report], *, output: Output, single: bool) -> str:
    """Every report as text (tables separated by a blank line) or as one JSON document:
    the report itself when ``single`` (one SpecialResource was asked for), else ``items``."""
    if output == "json":
        items = [r.to_json() for r in reports]
        return json.dumps(items[0] if single and items else {"items": items}, indent=2) + "\n"
    return "\n".join(format_text(r, wide=output == "wide") for r in reports)
