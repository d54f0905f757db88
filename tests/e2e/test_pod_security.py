"""Pod Security: with kube-apiserver enforcing ``restricted`` by default, the built-in recipes converge.

Runs on a cluster of its own (``hack/cluster up --pod-security restricted``, in
``.run/podsecurity-<pid>``, taken down after the module): the shared cluster enforces
nothing. Covers: a privileged pod in a namespace without labels is refused (the default is
in force); nvidia-gpu on two GPU nodes and simple-kmod on one node become Ready, every
state included, their namespaces labelled ``privileged`` for enforce, audit and warn;
``spec.podSecurity`` relabels sro's own namespace; a namespace that existed before its
SpecialResource is reported ``NamespaceInUse`` and keeps its labels (sro labels only the
namespaces it creates).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator

import pytest
import specialresources as srs
from operator_process import REPO, Operator
from support import cluster as cluster_mod
from support import waiting

pytestmark = pytest.mark.e2e

PSA = "pod-security.kubernetes.io/"
KERNEL = "5.14.0-427.13.1.el9_4.x86_64"
GROUP = "podsecurity"
INVENTORY = {
    "pools": [
        {
            "name": "psa-gpu",
            "count": 2,
            "kernel": KERNEL,
            "os": {"id": "rhel", "versionId": "9.4"},
            "pci": ["10de"],
            "devices": {"nvidia.com/gpu": 1},
            "labels": {srs.GROUP_LABEL: GROUP},
        },
        {
            "name": "psa-cpu",
            "count": 1,
            "kernel": KERNEL,
            "os": {"id": "rhel", "versionId": "9.4"},
            "pci": [],
            "labels": {srs.GROUP_LABEL: GROUP},
        },
    ]
}


@pytest.fixture(scope="module")
def restricted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[cluster_mod.Cluster, Operator]]:
    """A cluster enforcing ``restricted`` by default, with the CRD and ``sro run`` against it."""
    handle = cluster_mod.Cluster(REPO / ".run" / f"podsecurity-{os.getpid()}")
    base = tmp_path_factory.mktemp("podsecurity")
    inventory = base / "inventory.json"
    inventory.write_text(json.dumps(INVENTORY))
    operator: Operator | None = None
    try:
        handle.run("up", "--inventory", str(inventory), "--pod-security", "restricted")
        crd = REPO / "manifests" / "crd" / "sro.dev_specialresources.yaml"
        handle.kubectl("apply", "--server-side", "-f", str(crd))
        handle.kubectl("wait", "--for=condition=Established", "crd/specialresources.sro.dev", "--timeout=60s")
        handle.kubectl("create", "namespace", "sro-system")
        (base / "recipes").mkdir()
        operator = Operator(kubeconfig=handle.kubeconfig, recipes_dir=base / "recipes", log_dir=base)
        operator.start()
        yield handle, operator
    finally:
        if operator is not None:
            operator.stop()
        with contextlib.suppress(cluster_mod.CommandError):
            handle.run("down")
        handle.dir.with_name(handle.dir.name + ".lock").unlink(missing_ok=True)


def _psa_labels(cluster: cluster_mod.Cluster, namespace: str) -> dict[str, str]:
    labels = cluster.kubectl_json("get", "namespace", namespace)["metadata"].get("labels") or {}
    return {k: v for k, v in labels.items() if k.startswith(PSA)}


def _privileged(level: str) -> dict[str, str]:
    return {
        f"{PSA}{mode}{suffix}": level if not suffix else "latest"
        for mode in ("enforce", "audit", "warn")
        for suffix in ("", "-version")
    }


def _states(status: dict[str, object]) -> dict[str, str]:
    rows = status.get("states") or []
    assert isinstance(rows, list)
    return {row["name"]: row["phase"] for row in rows}


async def test_the_built_in_recipes_converge_where_restricted_is_enforced_by_default(
    restricted: tuple[cluster_mod.Cluster, Operator],
) -> None:
    cluster, operator = restricted
    cluster.kubectl("create", "namespace", "psa-plain")
    refused = cluster.kubectl(
        "run",
        "privileged",
        "-n",
        "psa-plain",
        "--image=example.com/x:1",
        "--dry-run=server",
        "--overrides",
        json.dumps({"spec": {"hostPID": True}}),
        check=False,
    )
    assert refused.returncode != 0 and "violates PodSecurity" in refused.stderr, refused.stderr

    start = time.monotonic()
    gpu = srs.manifest(
        "psa-gpu", recipe="nvidia-gpu", node_selector={srs.GROUP_LABEL: GROUP, srs.GPU_LABEL: "true"}
    )
    kmod = srs.manifest("psa-kmod", recipe="simple-kmod", node_selector={"sim.sro.dev/pool": "psa-cpu"})
    srs.create(cluster, gpu)
    srs.create(cluster, kmod)
    gpu_status = await srs.wait_ready(cluster, "psa-gpu", within=150)
    kmod_status = await srs.wait_ready(cluster, "psa-kmod", within=60)
    print(f"nvidia-gpu and simple-kmod Ready, restricted by default, after {time.monotonic() - start:.1f}s")
    assert gpu_status["nodes"] == {"selected": 2, "complete": 2}
    assert kmod_status["nodes"] == {"selected": 1, "complete": 1}
    assert set(_states(gpu_status).values()) == {"Complete"}
    assert "state-container-toolkit-validation" in _states(gpu_status)
    assert set(_states(kmod_status).values()) == {"Complete"}
    for name in ("psa-gpu", "psa-kmod"):
        assert _psa_labels(cluster, name) == _privileged("privileged"), name

    # An override for one mode relabels sro's own namespace; the others keep the computed level.
    patch = json.dumps({"spec": {"podSecurity": {"warn": "restricted"}}})
    cluster.kubectl("patch", "sr", "psa-kmod", "--type=merge", "-p", patch)
    want = {**_privileged("privileged"), f"{PSA}warn": "restricted"}
    await waiting.wait_for(
        lambda: _psa_labels(cluster, "psa-kmod") == want,
        timeout=30,
        message="the namespace relabelled as spec.podSecurity says",
    )
    assert operator.alive()


async def test_a_namespace_sro_did_not_create_is_refused_and_never_relabelled(
    restricted: tuple[cluster_mod.Cluster, Operator],
) -> None:
    cluster, _ = restricted
    cluster.kubectl("create", "namespace", "psa-taken")
    cluster.kubectl("label", "namespace", "psa-taken", f"{PSA}enforce=baseline")
    before = _psa_labels(cluster, "psa-taken")
    body = srs.manifest(
        "psa-taken",
        recipe="simple-kmod",
        node_selector={"sim.sro.dev/pool": "psa-cpu"},
        extra_spec={"namespace": "psa-taken"},
    )
    srs.create(cluster, body)
    await srs.wait_degraded(cluster, "psa-taken", "NamespaceInUse", within=30)
    assert _psa_labels(cluster, "psa-taken") == before
    assert cluster.kubectl_json("get", "daemonsets", "-n", "psa-taken")["items"] == []
