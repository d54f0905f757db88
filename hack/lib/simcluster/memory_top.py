"""What the operator held at its peak, by the code that made it (``--profile-memory``).

``memray run --aggregate --trace-python-allocators`` keeps, for every stack, the bytes still
live at the process's high-water mark. Python objects are counted one by one (not as the
allocator's 1 MB arenas, which would name whichever object happened to open an arena), so a
stack here is where the objects that fill the memory were made. Stacks are grouped by their
innermost frames in sro (a ``json.loads`` says little; who decoded what says more), and
the rest (the interpreter, imported modules) by their own innermost frame.
"""

from __future__ import annotations

import collections
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[3])
SRO = f"{ROOT}/sro/"


def _where(frame: tuple[str, str, int]) -> str:
    function, file, line = frame
    return f"{function} {file.removeprefix(ROOT + '/')}:{line}"


def top(capture: Path, *, count: int = 30, depth: int = 3) -> str:
    """The ``count`` biggest groups of bytes live at the peak of ``capture``, grouped by the
    ``depth`` innermost sro frames of their stacks; with the heap over time."""
    from memray import FileReader  # noqa: PLC0415 - the [bench] extra: only this needs it

    reader = FileReader(str(capture))
    groups: collections.Counter[str] = collections.Counter()
    objects: collections.Counter[str] = collections.Counter()
    for record in reader.get_high_watermark_allocation_records(merge_threads=True):
        stack = record.stack_trace(max_stacks=64)
        ours = [_where(f) for f in stack if f[1].startswith(SRO)][:depth]
        key = " < ".join(ours) if ours else "(outside sro) " + (_where(stack[0]) if stack else "?")
        groups[key] += record.size
        objects[key] += record.n_allocations
    snapshots = list(reader.get_memory_snapshots())
    peak = max(snapshots, key=lambda s: s.heap) if snapshots else None
    lines = []
    if peak is not None:
        start = snapshots[0].time
        lines.append(
            f"heap peak {peak.heap / 2**20:.1f} MB at {(peak.time - start) / 1000:.0f} s "
            f"(RSS then {peak.rss / 2**20:.1f} MB, under memray); live at the peak, by where it was made:"
        )
    total = sum(groups.values()) or 1
    for key, size in groups.most_common(count):
        lines.append(f"{size / 2**20:8.2f} MB {100 * size / total:5.1f}% {objects[key]:>9,} objects  {key}")
    return "\n".join(lines)
