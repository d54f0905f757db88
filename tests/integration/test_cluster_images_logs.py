"""Missing images and container logs of simulated pods.

A driver image that does not exist for a kernel must leave its pod in
ImagePullBackOff (and start it once the image appears); ``kubectl logs`` must serve a
pod's chosen lines, or a default line, through the API server.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from simcluster import pod_logs
from support.cluster import Cluster
from support.waiting import wait_for_sync

pytestmark = pytest.mark.integration


def pod(
    name: str, *, image: str, selector: dict[str, str], annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {"nodeSelector": selector, "containers": [{"name": "main", "image": image}]},
    }


def waiting_reason(cluster: Cluster, namespace: str, name: str) -> str | None:
    status = cluster.kubectl_json("get", "pod", name, "-n", namespace)["status"]
    for c in status.get("containerStatuses", []):
        if "waiting" in c.get("state", {}):
            return str(c["state"]["waiting"]["reason"])
    return None


def test_a_missing_image_keeps_a_pod_in_image_pull_back_off_until_it_exists(
    cluster: Cluster, namespace: str, node_pool: Any
) -> None:
    pool = node_pool(count=1)
    tag = uuid.uuid4().hex[:8]
    pattern = f"registry.example.com/driver-{tag}:*-5.14.0-427.13.1.el9_4.x86_64"
    cluster.add_missing_image(pattern)
    try:
        image = f"registry.example.com/driver-{tag}:550.54.15-5.14.0-427.13.1.el9_4.x86_64"
        cluster.apply(pod("driver", image=image, selector=pool.selector), namespace=namespace)
        wait_for_sync(
            lambda: waiting_reason(cluster, namespace, "driver") == "ImagePullBackOff",
            timeout=60,
            message="driver pod in ImagePullBackOff",
        )
        status = cluster.kubectl_json("get", "pod", "driver", "-n", namespace)["status"]
        assert status["phase"] == "Pending"
        assert {"type": "Ready", "status": "False"}.items() <= next(
            c for c in status["conditions"] if c["type"] == "Ready"
        ).items()
        # Another image on the same node is unaffected.
        cluster.apply(
            pod("other", image=f"registry.example.com/driver-{tag}:latest", selector=pool.selector),
            namespace=namespace,
        )
        wait_for_sync(
            lambda: (
                cluster.kubectl_json("get", "pod", "other", "-n", namespace)["status"].get("phase")
                == "Running"
            ),
            timeout=60,
            message="pod with a present image Running",
        )
    finally:
        cluster.remove_missing_image(pattern)
    wait_for_sync(
        lambda: (
            cluster.kubectl_json("get", "pod", "driver", "-n", namespace)["status"].get("phase") == "Running"
        ),
        timeout=60,
        message="driver pod Running once its image exists",
    )


def test_a_pods_chosen_log_lines_are_served_through_the_api_server(
    cluster: Cluster, namespace: str, node_pool: Any
) -> None:
    pool = node_pool(count=1)
    cluster.apply(
        pod(
            "chatty",
            image="example.com/driver:1",
            selector=pool.selector,
            annotations={"sim.sro.dev/logs": "building module nvidia\nmodule nvidia loaded"},
        ),
        namespace=namespace,
    )
    cluster.apply(pod("quiet", image="example.com/driver:1", selector=pool.selector), namespace=namespace)

    def logs(name: str) -> str | None:
        proc = cluster.kubectl("logs", name, "-n", namespace, check=False)
        return proc.stdout if proc.returncode == 0 and proc.stdout else None

    chatty = wait_for_sync(lambda: logs("chatty"), timeout=60, message="logs of the chatty pod")
    assert chatty.splitlines() == ["building module nvidia", "module nvidia loaded"]
    quiet = wait_for_sync(lambda: logs("quiet"), timeout=60, message="logs of the quiet pod")
    # The default log is as long as a real container's start-up output and matches no
    # recipe's ready line: a recipe that waits for a line its image never prints waits.
    lines = quiet.splitlines()
    assert len(quiet) > 32 * 1024
    assert "simulated container running" in lines
    assert not any("driver loaded" in line or "waiting for signal" in line for line in lines)


def test_the_nvidia_driver_image_prints_its_ready_line_after_long_build_output(
    cluster: Cluster, namespace: str, node_pool: Any
) -> None:
    pool = node_pool(count=1)
    cluster.apply(
        pod("nvdriver", image="nvcr.io/nvidia/driver:550.54.15-5.15.0", selector=pool.selector),
        namespace=namespace,
    )

    def logs() -> str | None:
        proc = cluster.kubectl("logs", "nvdriver", "-n", namespace, check=False)
        return proc.stdout if proc.returncode == 0 and "waiting for signal" in proc.stdout else None

    text = wait_for_sync(logs, timeout=60, message="the driver pod's ready line")
    before, ready, after = text.partition("Done, now waiting for signal")
    assert ready and len(before) >= 48 * 1024 and len(after) >= 4 * 1024


def test_a_driver_is_ready_long_before_its_build_ends_and_prints_its_line_then_even_across_a_restart(
    cluster: Cluster, namespace: str, node_pool: Any
) -> None:
    """A real driver container is Ready while it still builds, and says it is done only
    when its modules are loaded: here after its ``build-seconds``, even if devsim restarts
    in between."""
    pool = node_pool(count=1)
    cluster.apply(
        pod(
            "slowdriver",
            image="nvcr.io/nvidia/driver:550.54.15-5.15.0",
            selector=pool.selector,
            annotations={pod_logs.BUILD_SECONDS: "15"},
        ),
        namespace=namespace,
    )

    def built_at() -> float | None:
        body = cluster.kubectl_json("get", "pod", "slowdriver", "-n", namespace)
        conditions = body.get("status", {}).get("conditions") or []
        if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            return None
        return pod_logs.read_stamp((body["metadata"].get("annotations") or {}).get(pod_logs.BUILT_AT))

    def text() -> str:
        proc = cluster.kubectl("logs", "slowdriver", "-n", namespace, check=False)
        return proc.stdout if proc.returncode == 0 else ""

    at = wait_for_sync(built_at, timeout=60, message="the driver pod Ready with its build's end recorded")
    early = wait_for_sync(text, timeout=30, message="the building driver's log")
    cluster.restart("devsim")
    assert time.time() < at, "the pod started, was read and devsim restarted within its 15 s build"
    assert "Done, now waiting for signal" not in early and len(early) >= 48 * 1024, "still building"
    late = wait_for_sync(
        lambda: t if "Done, now waiting for signal" in (t := text()) else None,
        timeout=60,
        message="the ready line once the build has ended",
    )
    assert time.time() >= at - 1, "not before the build's end (1 s for the clocks of two processes)"
    before, _, after = late.partition("Done, now waiting for signal")
    assert len(before) >= 48 * 1024 and len(after) >= 4 * 1024 and "Done" not in after
