"""A node as of sro's own last write to it (``Observed.own_view``, ``own_annotation``).

Covers: while the cache is older than sro's last patch of a node, the view carries that
patch's labels and annotations of the SpecialResource (and none of its others), the
cache's of everyone else, the patch's resourceVersion and the cordon sro's patches set;
a cache as new as the patch, or newer, is read as it is, the very view.
"""

from __future__ import annotations

import pytest

from sro.model import views
from sro.plan import lifecycle, observed

pytestmark = pytest.mark.unit

KERNEL, LOGS = lifecycle.kernel_annotation("gpu"), lifecycle.logs_annotation("gpu")


def test_a_node_cached_before_sros_last_patch_reads_as_that_patch_left_it() -> None:
    cached = views.NodeView(
        name="n1",
        labels={"gpu.sro.dev/a": "ready", "gpu.sro.dev/b": "ready", "fpga.sro.dev/a": "ready", "zone": "z1"},
        annotations={KERNEL: "old", LOGS: "uid-1", "sro.dev/kernel.fpga": "k"},
        unschedulable=False,
        resource_version="41",
    )
    answer = observed.NodeAnswer(
        version=42,
        labels={"gpu.sro.dev/a": "ready", "gpu.sro.dev/upgrade": "cordoned"},
        annotations={KERNEL: "new", LOGS: None},
        unschedulable=True,
    )
    seen = observed.Observed(generation=1, nodes={"n1": cached}, node_answers={"n1": answer})
    view = seen.own_view(cached, sr_name="gpu")
    assert dict(view.labels) == {
        "gpu.sro.dev/a": "ready", "gpu.sro.dev/upgrade": "cordoned", "fpga.sro.dev/a": "ready", "zone": "z1"
    }  # fmt: skip
    assert dict(view.annotations) == {KERNEL: "new", "sro.dev/kernel.fpga": "k"}
    assert view.unschedulable is True and view.resource_version == "42"
    assert view.labels_of("gpu.sro.dev/") == ["gpu.sro.dev/a", "gpu.sro.dev/upgrade"]
    assert seen.own_annotation(cached, KERNEL) == "new" and seen.own_annotation(cached, LOGS) == ""
    assert seen.own_annotation(cached, "sro.dev/kernel.fpga") == "k"  # not one the answer keeps

    uncordoned_since = observed.NodeAnswer(version=42, labels={}, annotations={})  # no cordon of sro's
    seen = observed.Observed(generation=1, nodes={"n1": cached}, node_answers={"n1": uncordoned_since})
    assert seen.own_view(cached, sr_name="gpu").unschedulable is False

    for version in ("42", "50"):
        fresh = views.NodeView(name="n1", labels={"zone": "z1"}, resource_version=version)
        seen = observed.Observed(generation=1, nodes={"n1": fresh}, node_answers={"n1": answer})
        assert seen.own_view(fresh, sr_name="gpu") is fresh
        assert seen.own_annotation(fresh, KERNEL) == ""
