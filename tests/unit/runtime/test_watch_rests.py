"""Which watches read in batches (``Caches._calm``), with the settings' rests.

Covers: the Node watch rests ``calm_rest`` once calm and ``busy_rest`` while its events
queue work; the Pod watch never rests while calm (it has no heartbeats) and ``busy_rest``
while busy; every other watch reads each event at once. A read of a burst
is never followed by a rest.
"""

from __future__ import annotations

import pytest

from sro import settings
from sro.observe import metrics
from sro.runtime import caches
from sro.watch import calm

pytestmark = pytest.mark.unit

RESTS = {"calm_rest": 0.25, "busy_rest": 0.05}
CALM = settings.WatchSettings(**RESTS, calm_after=0.0)  # calm from the start
BUSY = settings.WatchSettings(**RESTS, calm_after=3600.0)  # busy all along
NODES = caches.WatchSpec(api_version="v1", kind="Node", role=caches.Role.NODES)
PODS = caches.WatchSpec(api_version="v1", kind="Pod", namespace="gpu-ops", role=caches.Role.OWNED)


def _of(spec: caches.WatchSpec, watch: settings.WatchSettings = CALM) -> calm.Calm | None:
    made = caches.Caches(settings=watch, metrics=metrics.Metrics(), enqueue=lambda key: None)
    return made._calm(spec, spec.kind.lower())


def test_the_node_and_pod_watches_rest_as_the_settings_say_and_no_other_does() -> None:
    nodes, pods = _of(NODES), _of(PODS)
    assert nodes is not None and pods is not None
    assert (nodes.rest(100), pods.rest(100)) == (0.25, 0.0)  # calm: only the Node watch rests
    for spec in (NODES, PODS):
        watch = _of(spec, BUSY)
        assert watch is not None and watch.rest(100) == 0.05
        assert watch.rest(calm.BUSY_BYTES) == 0.0  # a burst is read at once
    for kind in ("DaemonSet", "ConfigMap"):
        assert (
            _of(caches.WatchSpec(api_version="apps/v1" if kind == "DaemonSet" else "v1", kind=kind)) is None
        )
