"""Which Node changes a reconcile reads (``NodeView.relevant``)."""

from __future__ import annotations

import dataclasses

import pytest

from sro.model import views

pytestmark = pytest.mark.unit

LABELLED = views.NodeView(
    name="n1",
    labels={views.KERNEL_LABEL: "5.14.0-427.13.1.el9_4.x86_64", "x": "1"},
    kernel_version="5.14.0-427.13.1.el9_4.x86_64",
    os_image="Red Hat Enterprise Linux 9.4",
    ready=True,
)


def test_the_kubelets_kernel_report_is_not_read_while_nfd_labels_the_kernel() -> None:
    rebooted = dataclasses.replace(LABELLED, kernel_version="5.14.0-503.1.1.el9_4.x86_64")
    assert rebooted.relevant() == LABELLED.relevant()


def test_nfds_kernel_label_is_read() -> None:
    relabelled = dataclasses.replace(
        LABELLED, labels={**LABELLED.labels, views.KERNEL_LABEL: "5.14.0-503.1.1.el9_4.x86_64"}
    )
    assert relabelled.relevant() != LABELLED.relevant()


def test_without_nfds_label_the_kubelets_kernel_is_read() -> None:
    bare = dataclasses.replace(LABELLED, labels={"x": "1"})
    rebooted = dataclasses.replace(bare, kernel_version="5.14.0-503.1.1.el9_4.x86_64")
    assert rebooted.relevant() != bare.relevant()


def test_the_os_image_is_read() -> None:
    upgraded = dataclasses.replace(LABELLED, os_image="Red Hat Enterprise Linux 9.5")
    assert upgraded.relevant() != LABELLED.relevant()


def test_a_heartbeat_gap_is_not_read_readiness_and_the_node_controllers_taints() -> None:
    """NotReady, with the node controller's taints, and back: no pass (the upgrade walk,
    the only reader of readiness, looks again on its own while it waits on a node)."""
    gap = dataclasses.replace(
        LABELLED,
        ready=False,
        taints=(
            views.Taint(key="node.kubernetes.io/unreachable", effect="NoSchedule"),
            views.Taint(key="node.kubernetes.io/unreachable", effect="NoExecute", time_added="t"),
        ),
    )
    assert gap.relevant() == LABELLED.relevant()


def test_every_other_taint_is_read_beside_the_node_controllers() -> None:
    gpu = views.Taint(key="nvidia.com/gpu", effect="NoSchedule")
    not_ready = views.Taint(key="node.kubernetes.io/not-ready", effect="NoExecute")
    tainted = dataclasses.replace(LABELLED, taints=(gpu,))
    assert tainted.relevant() != LABELLED.relevant()
    gap = dataclasses.replace(tainted, ready=False, taints=(gpu, not_ready))
    assert gap.relevant() == tainted.relevant()
    gone = dataclasses.replace(gap, taints=(not_ready,))
    assert gone.relevant() != tainted.relevant()


def test_the_resource_version_alone_is_not_read() -> None:
    assert dataclasses.replace(LABELLED, resource_version="99").relevant() == LABELLED.relevant()


def test_devices_coming_and_going_in_allocatable_are_not_read() -> None:
    """A device plugin whose pod lost Ready in a heartbeat gap may take its devices off the
    node and put them back: nothing sro decides reads them, so no pass."""

    def node(gpus: str | None) -> views.NodeView:
        allocatable = {"cpu": "8", **({"nvidia.com/gpu": gpus} if gpus is not None else {})}
        return views.NodeView.from_body(
            {
                "metadata": {"name": "n1", "labels": dict(LABELLED.labels)},
                "status": {"allocatable": allocatable, "capacity": allocatable},
            }
        )

    assert node("8").relevant() == node(None).relevant() == node("0").relevant()
    relabelled = views.NodeView.from_body({"metadata": {"name": "n1", "labels": {"x": "2"}}})
    assert relabelled.relevant() != node("8").relevant()
