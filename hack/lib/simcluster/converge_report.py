"""The figures of ``hack/bench converge``: a table to read, JSON to keep, a PNG to look at.

Every speed figure is printed beside the floor measured in the same run on the same
cluster, as a ratio, so a slower or faster machine moves both and the ratio stays
comparable between runs.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping, Sequence
from typing import Any


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def _cpu(spent: Mapping[str, float]) -> str:
    parts = sorted(spent.items(), key=lambda kv: -kv[1])
    return f"{sum(spent.values()):.0f} CPU-s: " + ", ".join(f"{k} {v:.0f}" for k, v in parts)


def machine_rows(f: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The CPU of the whole machine in each phase: the control plane shares its cores with
    sro, so where they are all busy, what sro's writes cost the API server is time too."""
    rows: list[tuple[str, str]] = []
    cores = os.cpu_count() or 1
    phases: list[tuple[str, Mapping[str, Any], dict[str, float]]] = []
    if "floor" in f:
        phases.append(("floor", f["floor"], {}))
        if "labelled" in f["floor"]:
            phases.append(("labelled floor", f["floor"]["labelled"], {}))
    if "sro" in f:
        phases.append(("sro", f["sro"], {"sro": f["sro"]["cpu_seconds"]}))
    for name, phase, own in phases:
        spent = phase.get("control_plane_cpu")
        if not spent:  # absent from figures of older runs
            continue
        every = {**spent, **own}
        busy = sum(every.values()) / phase["seconds"]
        rows.append((f"{name}: CPU of every process", _cpu(every)))
        rows.append((f"{name}: cores busy", f"{busy:.2f} of {cores}"))
    if "floor" in f and "sro" in f and all(p.get("control_plane_cpu") for _, p, _ in phases):
        rows.append(("sro beyond the floor", _beyond(f["floor"], f["sro"])))
    return rows


def _beyond(floor: Mapping[str, Any], sro: Mapping[str, Any]) -> str:
    """What sro's run cost the machine beyond the floor's, and the time that much CPU
    takes at the floor's cores busy. An estimate, not a cause: the simulator's own CPU
    grows and shrinks with how its work arrives (kwok's fell by a third in a floor given
    11,000 node label patches besides, which finished no later), so a phase's CPU is not
    the work it had to do; ``--labelled-floor`` measures what the label writes cost."""
    control = sum(sro["control_plane_cpu"].values()) - sum(floor["control_plane_cpu"].values())
    own = sro["cpu_seconds"]
    busy = sum(floor["control_plane_cpu"].values()) / floor["seconds"]
    gap = sro["seconds"] - floor["seconds"]
    return (
        f"control plane {control:+.0f} CPU-s, sro {own:.0f} CPU-s: "
        f"{(control + own) / busy:.0f} s at the floor's {busy:.2f} cores (the run took {gap:.0f} s longer)"
    )


def per_read(events: Mapping[str, int], reads: Mapping[str, int]) -> str:
    """Events per read of the streams read most: what each wake-up of a stream carried."""
    busiest = sorted(reads.items(), key=lambda kv: -kv[1])[:4]
    return ", ".join(f"{k} {events.get(k, 0) / n:.1f} ({n} reads)" for k, n in busiest if n)


def step_rows(figures: Mapping[str, Mapping[str, Mapping[str, float]]]) -> list[tuple[str, str]]:
    """Table rows of ``converge_steps.Steps.figures``: each state's three intervals as
    p50 / p99, the pooled ones first."""

    def shown(part: Mapping[str, float]) -> str:
        if not part.get("count"):
            return "-"
        return f"{part['p50']:.2f} / {part['p99']:.2f} s"

    out: list[tuple[str, str]] = []
    for state in ("all", *(s for s in figures if s != "all")):
        if state not in figures:
            continue
        f = figures[state]
        name = "every state" if state == "all" else state
        out.append(
            (
                f"  {name}",
                f"opened {shown(f['opened'])}, ran {shown(f['ran'])}, recorded {shown(f['recorded'])}",
            )
        )
    return out


def phases_text(phases: Mapping[str, float]) -> str:
    """``Progressing 240.3 s, Degraded: ApplyFailed 12.0 s``: longest first."""
    return ", ".join(f"{k} {v:.1f} s" for k, v in sorted(phases.items(), key=lambda kv: -kv[1]))


def table(figures: Mapping[str, Any]) -> str:
    """The figures as aligned text, one line each, the floor beside what it bounds."""
    f = figures
    rows: list[tuple[str, str]] = [
        ("git revision", f["revision"]),
        ("nodes / kernels", f"{f['nodes']} GPU nodes over {f['kernels']} kernels"),
    ]
    if "build_seconds" in f:
        low, high = f["build_seconds"]
        rows.append(("drivers build before their ready line", f"{low:g} to {high:g} s (each its own)"))
    if "floor" in f:
        rows += [
            ("floor: objects posted / pods", f"{f['floor']['objects']} objects, {f['floor']['pods']} pods"),
            ("floor: all pods Ready/Succeeded", f"{f['floor']['seconds']:.1f} s"),
        ]
        if "chain_seconds" in f["floor"]:
            rows.append(("floor: chain of states, one node alone", f"{f['floor']['chain_seconds']:.1f} s"))
        if "labelled" in f["floor"]:
            both = f["floor"]["labelled"]
            rows.append(
                (
                    f"labelled floor: + {both['label_patches']} label patches",
                    f"{both['seconds']:.1f} s (pods {both['pods_seconds']:.1f} s)",
                )
            )
    rows += [
        (
            "sro: SpecialResource Ready",
            f"NOT READY: {f['not_ready']}" if "not_ready" in f else f"{f['sro']['seconds']:.1f} s",
        ),
        ("sro / floor", f"{f['ratio']:.2f}x" if "ratio" in f else "(no floor measured)"),
        *(
            [("sro: status phases while converging", phases_text(f["sro"]["phases"]))]
            if f.get("sro", {}).get("phases")
            else []
        ),
        *([("sro / labelled floor", f"{f['labelled_ratio']:.2f}x")] if "labelled_ratio" in f else []),
        ("sro CPU during convergence", f"{f['sro']['cpu_seconds']:.1f} CPU-s"),
        # VmHWM in MiB (2^20 bytes), and in MB (10^6) beside it: targets are given in either
        ("sro peak RSS", f"{(rss := f['sro']['peak_rss_mb']):.0f} MiB ({rss * 2**20 / 1e6:.0f} MB)"),
        (
            "sro requests during convergence",
            f"{f['sro']['requests']} (non-watch {f['sro']['requests_non_watch']})",
        ),
        ("sro writes in the audit log", f"{f['sro']['audit_writes']}"),
        ("pods sro made again after a deletion", _again(f["sro"])),
        ("creating applies of a pod repeated", str(f["sro"].get("pod_applies_repeated", "(not counted)"))),
        ("pods sro deleted", str(f["sro"].get("pods_deleted_by_sro", "(not counted)"))),
        ("pods the pod garbage collector deleted", str(f["sro"].get("pods_collected", "(not counted)"))),
        ("floor of writes (objects + nodes x (label patches + taints))", f"{f['sro']['write_floor']}"),
    ]
    rows += machine_rows(f)
    steps = f["sro"].get("steps") or {}
    if steps:
        passes = max(v["passes"] for v in steps.values())
        rows.append(
            (
                f"sro passes / seconds by step ({passes} passes)",
                ", ".join(f"{k} {v['seconds']:.1f}" for k, v in steps.items()),
            )
        )
    read = f["sro"].get("watch_events")
    if read:  # absent from figures of older runs
        rows.append(
            (
                f"sro watch events during convergence ({sum(read.values())})",
                ", ".join(f"{k} {v}" for k, v in sorted(read.items(), key=lambda kv: -kv[1])[:6]),
            )
        )
    if read and f["sro"].get("watch_reads"):  # absent from figures of older runs
        rows.append(("sro watch events per read", per_read(read, f["sro"]["watch_reads"])))
    stalls = f["sro"].get("loop_stalls")
    if stalls:  # absent from figures of older runs
        rows.append(
            (
                "sro event loop: probes / late ≥ 0.25 s / ≥ 1 s / late in all",
                f"{stalls['probes']:.0f} / {stalls['late_0.25s']:.0f} / {stalls['late_1s']:.0f}"
                f" / {stalls['late_seconds']:.1f} s",
            )
        )
    collections = f["sro"].get("collections")
    if collections:  # absent from figures of older runs
        rows.append(
            (
                "sro garbage collections by generation: count / ≥ 0.25 s / ≥ 1 s / seconds",
                "; ".join(
                    f"{gen}: {c['count']:.0f} / {c['late_0.25s']:.0f} / {c['late_1s']:.0f}"
                    f" / {c['seconds']:.1f} s"
                    for gen, c in sorted(collections.items())
                ),
            )
        )
    if "watch_restarts" in f["sro"]:
        restarts = f["sro"]["watch_restarts"]
        rows.append(
            (
                f"sro watch restarts during convergence ({sum(restarts.values())})",
                ", ".join(f"{k} {v}" for k, v in sorted(restarts.items(), key=lambda kv: -kv[1])) or "none",
            )
        )
    woke = f["sro"].get("watch_wakes")
    if woke:  # absent from figures of older runs
        rows.append(
            (
                f"queue adds by watch events ({sum(woke.values())})",
                ", ".join(f"{k} {v}" for k, v in sorted(woke.items(), key=lambda kv: -kv[1])[:6]),
            )
        )
    chain = f["sro"].get("chain")
    if chain:  # absent from figures of older runs
        rows.append(("sro's chain, per node and state", "p50 / p99 of each step (converge_steps)"))
        rows += step_rows(chain)
    for verb_resource, count in sorted(f["sro"]["requests_by"].items(), key=lambda kv: -kv[1])[:12]:
        rows.append((f"  {verb_resource}", str(count)))
    idle = f.get("idle")
    if idle:
        rows.append(
            (
                f"idle {idle['seconds']:.0f} s after Ready",
                f"{idle['requests_non_watch']} non-watch requests, {idle['writes']} writes, "
                f"{idle['cpu_seconds']:.2f} CPU-s "
                f"({100 * idle['cpu_seconds'] / idle['seconds']:.2f}% of a core)",
            )
        )
        gap = idle.get("blink")
        if gap:
            rows.append(
                (
                    f"  kubelets (kwok, devsim) paused {gap['paused_seconds']:.0f} s at its start",
                    f"{gap['nodes_not_ready_max']} nodes NotReady at most, all Ready again "
                    f"{gap['seconds_to_ready_again']:.0f} s after ({gap['nodes_not_ready_after']} not)",
                )
            )
        if "passes" in idle:  # what woke it (absent from figures of older runs)
            events = ", ".join(f"{k} {v}" for k, v in idle["watch_events"].items()) or "none"
            rows.append(("  passes; watch events", f"{idle['passes']}; {events}"))
        if idle.get("watch_reads"):
            rows.append(("  watch events per read", per_read(idle["watch_events"], idle["watch_reads"])))
        if "watch_wakes" in idle:
            wakes = ", ".join(f"{k} {v}" for k, v in idle["watch_wakes"].items()) or "none"
            rows.append(("  queue adds by watch events", wakes))
        for what, count in list(idle.get("writes_by", {}).items())[:6]:
            rows.append((f"  {what}", str(count)))
    again = f.get("restart")
    if again:
        rows.append(
            (
                "operator restarted after Ready",
                f"{again['writes']} writes, {again['requests_non_watch']} non-watch requests, "
                f"{again['passes']} passes, {again['cpu_seconds']:.1f} CPU-s, "
                f"no work left after {again['seconds_to_idle']:.1f} s",
            )
        )
        for what, count in sorted(
            {**again["writes_by"], **again["requests_by"]}.items(), key=lambda kv: -kv[1]
        )[:6]:
            rows.append((f"  {what}", str(count)))
    changes = f.get("kernel_changes")
    if changes and changes["count"]:
        rows.append(
            (
                f"kernel change x{changes['count']}: new DaemonSet",
                f"p50 {changes['daemonset_p50']:.2f} s, p99 {changes['daemonset_p99']:.2f} s",
            )
        )
        rows.append(
            (
                "kernel change: node complete again",
                f"p50 {changes['complete_p50']:.2f} s, p99 {changes['complete_p99']:.2f} s",
            )
        )
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def kernel_figures(samples: Sequence[tuple[float, float]]) -> dict[str, Any]:
    ds = [a for a, _ in samples]
    done = [b for _, b in samples]
    return {
        "count": len(samples),
        "daemonset_p50": percentile(ds, 50),
        "daemonset_p99": percentile(ds, 99),
        "complete_p50": percentile(done, 50),
        "complete_p99": percentile(done, 99),
        "complete_mean": statistics.fmean(done) if done else float("nan"),
        # each change in order: an outlier among ten is the p99, and which one it was
        # (the first after a restart, one at random) says where to look
        "samples": [{"daemonset": a, "complete": b} for a, b in samples],
    }


def runs_summary(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Several runs of the bench side by side: each run's floor, sro and ratio, and the
    medians. The simulator's pulls are random, so one run's ratio moves by a fifth either
    way; the median of several is the figure to compare."""
    rows: list[dict[str, float | None]] = [
        {
            "floor": r["floor"]["seconds"] if "floor" in r else None,
            "sro": r["sro"]["seconds"] if "sro" in r else None,
            "ratio": r.get("ratio"),
            "labelled_ratio": r.get("labelled_ratio"),
        }
        for r in runs
    ]

    def median(key: str) -> float | None:
        values = [v for row in rows if (v := row[key]) is not None]
        return statistics.median(values) if values else None

    return {"runs": rows, "median": {key: median(key) for key in ("floor", "sro", "ratio", "labelled_ratio")}}


def runs_table(summary: Mapping[str, Any]) -> str:
    """``runs_summary`` as lines to read: one per run, then the medians."""

    def shown(value: float | None, unit: str) -> str:
        return "-" if value is None else f"{value:.2f}x" if unit == "x" else f"{value:.1f} s"

    rows = [(str(i), row) for i, row in enumerate(summary["runs"], 1)] + [("median", summary["median"])]
    labelled = any(row.get("labelled_ratio") is not None for _, row in rows)
    lines = [
        f"{'run':<8}{'floor':>10}{'sro':>10}{'sro / floor':>14}" + (f"{'/ labelled':>12}" if labelled else "")
    ]
    for name, row in rows:
        floor, sro, ratio = shown(row["floor"], "s"), shown(row["sro"], "s"), shown(row["ratio"], "x")
        extra = f"{shown(row.get('labelled_ratio'), 'x'):>12}" if labelled else ""
        lines.append(f"{name:<8}{floor:>10}{sro:>10}{ratio:>14}{extra}")
    return "\n".join(lines)


def _again(sro: Mapping[str, Any]) -> str:
    """How many pods sro made again, and after whose deletions."""
    count = sro.get("pods_created_again")
    if count is None:
        return "(not counted)"
    by = sro.get("pods_created_again_by") or {}
    if not by:
        return f"{count}"
    return f"{count} (deleted by " + ", ".join(f"{u}: {n}" for u, n in sorted(by.items())) + ")"
