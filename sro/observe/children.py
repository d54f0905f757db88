"""A metric's labelled children, each looked up once.

prometheus_client's ``labels()`` checks every value, orders keyword arguments and takes
the metric's lock on every call. The watch and request paths ask for the same few
children (a resource, a verb, a status code) on every event and every request: tens of
thousands of times while a fleet converges, a visible share of the operator's CPU. Only
for metrics whose children are never removed (a removed child would live on here).
"""

from __future__ import annotations

from typing import Generic, TypeVar

from prometheus_client.metrics import MetricWrapperBase

M = TypeVar("M", bound=MetricWrapperBase)


class Children(Generic[M]):
    """``children(*values)`` is ``metric.labels(*values)``: values in the order of the
    metric's label names."""

    def __init__(self, metric: M) -> None:
        self._metric = metric
        self._known: dict[tuple[str, ...], M] = {}

    def __call__(self, *values: str) -> M:
        child = self._known.get(values)
        if child is None:
            child = self._known[values] = self._metric.labels(*values)
        return child
