"""CPU per Node and Pod watch event, and a list page's cost, decoded whole and as the cache
reads it (``sro.watch.events.Parser`` with ``sro.model.bodies``).

    hack/bench decode [--events 20000] [--repeat 5]

The bodies are a Node and a driver Pod as the API server sent them, managedFields included
(``tests/unit/watch/data``). Each figure is a reflector's work for one event: the line
parsed, then projected into the view the cache stores (``NodeView`` with the previous
version's labels, as every heartbeat is; ``PodView``). The **whole** row parses the line
with ``events.parse`` (orjson, every field built): the floor the typed row is measured
against, in the same run. The page rows read a list page of 500 Nodes (each its own name):
time, and the peak of Python allocations while it is read (``tracemalloc``, in a separate
call so it does not slow the timed ones).

Times are process CPU (``time.process_time``), the median and the best of ``--repeat``
runs of ``--events`` events each, on events back to back: a process woken for one event
pays several times as much (the caches are cold), for either decoder.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sro.model import bodies, views  # noqa: E402
from sro.watch import events  # noqa: E402

DATA = ROOT / "tests" / "unit" / "watch" / "data"
PAGE_NODES = 500


def timed(work: Callable[[], object], *, times: int, repeat: int) -> tuple[float, float]:
    """Median and best CPU seconds of ``times`` calls of ``work``, over ``repeat`` runs."""
    runs = []
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(times):
            work()
        runs.append(time.process_time() - start)
    return statistics.median(runs), min(runs)


def peak_bytes(work: Callable[[], object]) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    result = work()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    del result
    return peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000, help="events per timed run")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per row")
    args = parser.parse_args()

    node: dict[str, Any] = json.loads((DATA / "node.json").read_text())
    pod: dict[str, Any] = json.loads((DATA / "pod.json").read_text())
    previous = views.NodeView.from_body(node)
    node_line = orjson.dumps({"type": "MODIFIED", "object": node})
    pod_line = orjson.dumps({"type": "MODIFIED", "object": pod})
    typed_nodes = events.Parser(body=bodies.NodeBody, int64=True)
    typed_pods = events.Parser(body=bodies.PodBody, int64=True)

    def whole(line: bytes) -> Any:
        event = events.parse(line, int64=True)
        assert event is not None
        return event.object

    def typed(parse: events.Parser, line: bytes) -> Any:
        event = parse(line)
        assert event is not None
        return event.object

    items = []
    for i in range(PAGE_NODES):
        item = copy.deepcopy(node)
        item["metadata"]["name"] = f"node-{i}"
        items.append(item)
    page = orjson.dumps(
        {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}
    )
    whole_page = events.Parser()

    rows: list[tuple[str, str, Callable[[], object], int]] = [
        (
            "node event",
            "whole",
            lambda: views.NodeView.from_body(whole(node_line), previous=previous),
            args.events,
        ),
        (
            "node event",
            "typed",
            lambda: views.NodeView.from_body(typed(typed_nodes, node_line), previous=previous),
            args.events,
        ),
        ("pod event", "whole", lambda: views.PodView.from_body(whole(pod_line)), args.events),
        ("pod event", "typed", lambda: views.PodView.from_body(typed(typed_pods, pod_line)), args.events),
        (f"page of {PAGE_NODES} nodes", "whole", lambda: whole_page.page(page), max(1, args.events // 2000)),
        (f"page of {PAGE_NODES} nodes", "typed", lambda: typed_nodes.page(page), max(1, args.events // 2000)),
    ]
    print(
        f"Python {sys.version.split()[0]}; node line {len(node_line):,} bytes, "
        f"pod line {len(pod_line):,} bytes, page {len(page):,} bytes; median and best of {args.repeat}"
    )
    print(f"{'what':<20} {'decoded':<7} {'median us':>10} {'best us':>9} {'/ whole':>8} {'peak MiB':>9}")
    floor: dict[str, float] = {}
    for what, how, work, times in rows:
        median, best = timed(work, times=times, repeat=args.repeat)
        median_us, best_us = median / times * 1e6, best / times * 1e6
        floor.setdefault(what, median_us)
        peak = f"{peak_bytes(work) / 2**20:9.1f}" if what.startswith("page") else f"{'':9}"
        print(f"{what:<20} {how:<7} {median_us:10.1f} {best_us:9.1f} {median_us / floor[what]:7.2f}x {peak}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
