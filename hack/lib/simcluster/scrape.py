"""One read of the operator's ``/metrics``, and the figures the benchmark takes from it.

Every figure of a measurement point comes from the same read: each fetch makes the
operator render its whole exposition (hundreds of series, more with many states), which
is CPU the benchmark would otherwise add to the operator's own, in the idle window most
of all, where it is nearly all there is. So a measurement point takes one ``Scrape`` and
reads its CPU before it (``converge_sro.Operator.scrape``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)$")


@dataclass(frozen=True)
class Scrape:
    """The text of one ``/metrics`` read (empty if the operator did not answer)."""

    text: str

    def samples(self, name: str) -> list[tuple[dict[str, str], float]]:
        """Every sample of the series ``name``, with its labels."""
        found = []
        for line in self.text.splitlines():
            if not line.startswith(name):
                continue
            m = _SAMPLE.match(line)
            if m and m["name"] == name:
                found.append((dict(_LABEL.findall(m["labels"] or "")), float(m["value"])))
        return found

    def requests(self) -> Counter[tuple[str, str]]:
        """Requests sent so far, by (verb, resource), from the operator's own counter."""
        counts: Counter[tuple[str, str]] = Counter()
        for labels, value in self.samples("sro_api_requests_total"):
            counts[(labels.get("verb", ""), labels.get("resource", ""))] += int(value)
        return counts

    def step_seconds(self) -> dict[str, tuple[float, int]]:
        """Seconds and passes so far by reconcile step (read, render, plan, execute, finish)."""
        passes = {labels["step"]: int(v) for labels, v in self.samples("sro_reconcile_step_seconds_count")}
        return {
            labels["step"]: (seconds, passes.get(labels["step"], 0))
            for labels, seconds in self.samples("sro_reconcile_step_seconds_sum")
        }

    def passes(self) -> int:
        """Reconcile passes so far (those that got as far as reading the caches)."""
        return self.step_seconds().get("read", (0.0, 0))[1]

    def _by_stream(self, name: str) -> Counter[str]:
        counts: Counter[str] = Counter()
        for labels, value in self.samples(name):
            counts[labels.get("resource", "")] += int(value)
        return counts

    def streams_since(self, earlier: Scrape) -> dict[str, dict[str, int]]:
        """What each watch stream did between ``earlier`` and this read: its events, the
        work-queue adds they made and its reads, by resource (those that did something)."""
        figures = {}
        for figure, name in (
            ("watch_events", "sro_watch_events_total"),
            ("watch_wakes", "sro_watch_wakes_total"),
            ("watch_reads", "sro_watch_reads_total"),
        ):
            figures[figure] = _grown(self._by_stream(name), earlier._by_stream(name))
        return figures

    def restarts_since(self, earlier: Scrape) -> dict[str, int]:
        """Watch streams restarted between ``earlier`` and this read, by ``resource reason``."""
        return _grown(self.watch_restarts(), earlier.watch_restarts())

    def watch_restarts(self) -> Counter[str]:
        """Watch streams restarted so far, by ``resource reason`` (closed by the server at its
        timeout, or for a slow reader; an error; inactive; expired)."""
        counts: Counter[str] = Counter()
        for labels, value in self.samples("sro_watch_restarts_total"):
            if value:
                counts[f"{labels.get('resource', '')} {labels.get('reason', '')}"] += int(value)
        return counts

    def stalls(self) -> dict[str, float]:
        """The event loop's probes so far (``sro.observe.looplag``): how many, and how many
        woke late by a quarter second and by a second, the length of stall that costs a
        watch at a converging fleet's event rate."""
        late = {labels.get("le", ""): v for labels, v in self.samples("sro_event_loop_lag_seconds_bucket")}
        probes = sum(v for _, v in self.samples("sro_event_loop_lag_seconds_count"))
        return {
            "probes": probes,
            "late_0.25s": probes - late.get("0.25", probes),
            "late_1s": probes - late.get("1.0", probes),
            "late_seconds": sum(v for _, v in self.samples("sro_event_loop_lag_seconds_sum")),
        }

    def collections(self) -> dict[str, dict[str, float]]:
        """The garbage collector's collections so far by generation (``sro.observe.gcpause``):
        how many, how many held the process a quarter second and a second (``stalls``, if
        they were these), and their seconds."""
        by: dict[str, dict[str, float]] = {}
        for labels, v in self.samples("sro_gc_pause_seconds_count"):
            by.setdefault(labels.get("generation", ""), {})["count"] = v
        for labels, v in self.samples("sro_gc_pause_seconds_sum"):
            by.setdefault(labels.get("generation", ""), {})["seconds"] = v
        for labels, v in self.samples("sro_gc_pause_seconds_bucket"):
            one = by.setdefault(labels.get("generation", ""), {})
            if labels.get("le") in ("0.25", "1.0"):
                one[f"under_{labels['le']}s"] = v
        return {
            gen: {
                "count": one.get("count", 0.0),
                "late_0.25s": one.get("count", 0.0) - one.get("under_0.25s", 0.0),
                "late_1s": one.get("count", 0.0) - one.get("under_1.0s", 0.0),
                "seconds": one.get("seconds", 0.0),
            }
            for gen, one in sorted(by.items())
        }

    def busy(self) -> bool:
        """Whether a key waits in the queue or a worker is in a pass (its own gauges); an
        operator that did not answer counts as busy."""
        held = [v for name in ("sro_workqueue_depth", "sro_active_workers") for _, v in self.samples(name)]
        return len(held) < 2 or any(v > 0 for v in held)


def _grown(now: Counter[str], before: Counter[str]) -> dict[str, int]:
    """How much each count grew from ``before`` to ``now``, those that did, in key order."""
    now = Counter(now)
    now.subtract(before)
    return {k: v for k, v in sorted(now.items()) if v}
