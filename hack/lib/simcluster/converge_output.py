"""What one run of ``hack/bench converge`` leaves behind: ``converge.json`` to keep,
``converge.png`` to look at (per-state nodes beside the floor's pods), and the text to
print: the table (``converge_report``) and, when the operator was profiled, the top of
its profile.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simcluster import converge_report


def write_json(figures: Mapping[str, Any], path: Path) -> None:
    path.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")


def plot(figures: Mapping[str, Any], path: Path) -> bool:
    """Per-state completed nodes over time beside the floor's pods-done curve; False when
    matplotlib is not installed (the table and JSON are written regardless)."""
    try:
        import matplotlib  # noqa: PLC0415 - optional: only the plot needs it

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return False
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5), sharex=True)
    if "floor" in figures:
        floor = figures["floor"]["curve"]
        left.step(
            [t for t, _ in floor],
            [n for _, n in floor],
            where="post",
            color="black",
            label="floor: pods done",
        )
        left.set_title(f"floor: {figures['floor']['pods']} pods, {figures['floor']['seconds']:.1f} s")
        right.axvline(figures["floor"]["seconds"], color="black", linestyle="--", label="floor done")
        left.legend(loc="lower right")
    left.set_xlabel("seconds")
    left.set_ylabel("pods Ready/Succeeded")
    for state, curve in figures["sro"]["curves"].items():
        right.step([t for t, _ in curve], [n for _, n in curve], where="post", label=state)
    right.axvline(figures["sro"]["seconds"], color="red", linestyle=":", label="sro Ready")
    ratio = f" ({figures['ratio']:.2f}x)" if "ratio" in figures else ""
    right.set_title(f"sro: nodes per state ready, Ready at {figures['sro']['seconds']:.1f} s{ratio}")
    right.set_xlabel("seconds")
    right.set_ylabel("nodes")
    right.legend(loc="lower right", fontsize="small")
    fig.suptitle(
        f"hack/bench converge: {figures['nodes']} GPU nodes, {figures['kernels']} kernels "
        f"({figures['revision']})"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def written(figures: Mapping[str, Any], out: Path, *, profile: bool) -> str:
    """Write one run's JSON and PNG into ``out``; what to print: the table, where they went,
    and with ``profile`` the top of the operator's profile."""
    write_json(figures, out / "converge.json")
    drawn = plot(figures, out / "converge.png")
    text = f"\n{converge_report.table(figures)}\n\nwrote {out / 'converge.json'}"
    text += f" and {out / 'converge.png'}" if drawn else " (no matplotlib: no PNG)"
    if profile:
        text += f"\n\nprofile of sro run while converging ({out / 'operator.spy'}):\n"
        text += profile_top(out / "operator.spy", count=25)
        if (out / "operator-idle.spy").exists():
            text += f"\n\nprofile of sro run in the idle window ({out / 'operator-idle.spy'}):\n"
            text += profile_top(out / "operator-idle.spy", count=25)
    return text


def profile_top(path: Path, *, count: int) -> str:
    """The ``count`` functions with the most samples in a py-spy raw profile, inclusive
    (anywhere on the stack, once per stack) and self (on top), as percentages of samples
    in which a thread of the process held the GIL (``converge_sro.Operator.profile``)."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        samples = int(n)
        total += samples
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]
        own[frames[-1]] += samples
        for frame in set(frames):
            inclusive[frame] += samples
    if not total:
        return "(no samples)"
    ours = Counter({f: n for f, n in inclusive.items() if "(sro/" in f})
    lines = [f"{total} samples; inclusive, sro's own functions:"]
    lines += [f"  {100 * n / total:5.1f}%  {f[:110]}" for f, n in ours.most_common(count)]
    lines.append("self:")
    lines += [f"  {100 * n / total:5.1f}%  {f[:110]}" for f, n in own.most_common(count)]
    return "\n".join(lines)
