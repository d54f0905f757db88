"""The operator exactly as its Deployment runs it, with nothing but its service account's rights.

The install is the Helm chart's, as an administrator runs it (``helm upgrade --install sro
charts/sro -n sro-system``, the default values but the image hack/image builds and no
replicas: simulated nodes run no containers); test_chart_render.py proves its objects
those of the kustomize tree in ``manifests/``, so this proves both installs' RBAC
sufficient. ``sro run`` gets the installed Deployment's own args and environment (read
from the release's manifest, the downward-API namespace filled in), a
token from a TokenRequest for ``sro-system/sro`` with the cluster's CA laid out as in a
pod (``/var/run/secrets/kubernetes.io/serviceaccount/``, in a private mount namespace so
the machine is untouched), ``KUBERNETES_SERVICE_HOST``/``PORT`` and no kubeconfig. It then
takes the lease, converges an nvidia-gpu SpecialResource with taints and priority classes
(namespaces, RBAC, DaemonSets, pods, a Deployment, Services, node labels and taints,
status, Events) and tears it down again, and at no point gets a 403 from the API server.
On the way it checks that every ``sro_*`` metric the alerts and the dashboard in
``manifests/monitoring`` query is one the operator exports.

The only change to the Deployment's settings is the listen addresses (free loopback ports
instead of 0.0.0.0:8080 for metrics and 0.0.0.0:8081 for probes). The session's kubeconfig
operator is stopped meanwhile, so no other process with more rights reconciles the same
objects. The release stays installed afterwards, like the kustomize install other tests
apply (both name the same objects).
"""

from __future__ import annotations

import base64
import os
import re
import shlex
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import specialresources as srs
import yaml
from conftest import Made, unique
from operator_process import _LABEL, _SAMPLE, SRO, Operator, free_port
from support import chart, waiting
from support import cluster as cluster_mod

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "sro-system"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
LOCAL_IMAGE = ("localhost/sro", "dev")
"""The image hack/image builds (its default SRO_IMAGE), as repository and tag."""


def _install_chart_without_workload(cluster: cluster_mod.Cluster) -> dict[str, Any]:
    """Installs (or upgrades) the chart with no replicas; returns the installed Deployment.

    ``--take-ownership``: objects of the same names may be there from the kustomize install.
    """
    helm = ["--kubeconfig", str(cluster.kubeconfig), "--namespace", NAMESPACE]
    chart.run(
        "helm", "upgrade", "--install", chart.RELEASE, str(chart.CHART), *helm,
        "--create-namespace", "--take-ownership", "--set", "replicaCount=0",
        "--set", f"image.repository={LOCAL_IMAGE[0]}", "--set", f"image.tag={LOCAL_IMAGE[1]}",
        timeout=300,
    )  # fmt: skip
    cluster.kubectl("wait", "--for=condition=Established", "crd/specialresources.sro.dev", "--timeout=60s")
    manifest = chart.docs(chart.run("helm", "get", "manifest", chart.RELEASE, *helm))
    (deployment,) = [d for d in manifest if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == ":".join(LOCAL_IMAGE), container["image"]
    return deployment


def _ca_bundle(kubeconfig: Path) -> bytes:
    config = yaml.safe_load(kubeconfig.read_text())
    entry = config["clusters"][0]["cluster"]
    if "certificate-authority-data" in entry:
        return base64.b64decode(entry["certificate-authority-data"])
    return Path(entry["certificate-authority"]).read_bytes()


def _pod_environment(container: dict[str, Any], *, namespace: str) -> dict[str, str]:
    """The container's env as the kubelet would set it (only the downward-API fields it uses)."""
    env: dict[str, str] = {}
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = item["value"]
            continue
        field = item["valueFrom"]["fieldRef"]["fieldPath"]
        assert field == "metadata.namespace", f"unexpected downward-API field {field}"
        env[item["name"]] = namespace
    return env


class InClusterOperator:
    """``sro run`` as the Deployment's container, in a private mount namespace."""

    def __init__(self, *, cluster: cluster_mod.Cluster, deployment: dict[str, Any], workdir: Path) -> None:
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "sro"
        ports: dict[str, int] = {}
        self.args = []
        for arg in container["args"]:
            flag, _, value = arg.partition("=")
            listens = flag.endswith(("-bind-address", "-addr"))
            self.args.append(f"{flag}=127.0.0.1:{ports.setdefault(value, free_port())}" if listens else arg)
        flags = dict(a.partition("=")[::2] for a in self.args)
        self.port = int(flags["--metrics-bind-address"].rpartition(":")[2])
        self.health_port = int(flags["--health-probe-bind-address"].rpartition(":")[2])
        assert self.port != self.health_port, self.args
        server = urlparse(cluster.server())
        self.sa_source = workdir / "serviceaccount"
        self.sa_source.mkdir()
        token = cluster.kubectl("create", "token", "sro", "-n", NAMESPACE, "--duration=1h").stdout.strip()
        (self.sa_source / "token").write_text(token)
        (self.sa_source / "ca.crt").write_bytes(_ca_bundle(cluster.kubeconfig))
        (self.sa_source / "namespace").write_text(NAMESPACE)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBECONFIG", "SRO_"))}
        env.update(_pod_environment(container, namespace=NAMESPACE))
        env.update(KUBERNETES_SERVICE_HOST=server.hostname or "", KUBERNETES_SERVICE_PORT=str(server.port))
        self.env = env
        self.log_path = workdir / "operator-incluster.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *, timeout: float = 60) -> None:
        # /run is a fresh tmpfs in the new mount namespace: the pod layout exists only there.
        script = (
            "set -e; mount -t tmpfs tmpfs /run; mkdir -p " + SA_DIR + "; "
            f"cp {shlex.quote(str(self.sa_source))}/* {SA_DIR}/; "
            "exec " + " ".join(shlex.quote(a) for a in [str(SRO), *self.args])
        )
        with self.log_path.open("wb") as out:
            self.proc = subprocess.Popen(
                ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd="/",
            )
        try:
            waiting.wait_for_sync(
                lambda: self._ready() or self.proc.poll() is not None,
                timeout=timeout,
                message="sro run ready",
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}:\n{self.log_tail()}") from None
        if self.proc.poll() is not None:
            raise AssertionError(f"sro run exited {self.proc.returncode}:\n{self.log_tail()}")

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=10)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def samples(self, metric: str) -> list[tuple[dict[str, str], float]]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
        found = []
        for line in text.splitlines():
            match = _SAMPLE.match(line.strip())
            if match and not line.startswith("#") and match.group("name") == metric:
                found.append((dict(_LABEL.findall(match.group("labels") or "")), float(match.group("value"))))
        return found

    def forbidden(self) -> list[tuple[dict[str, str], float]]:
        return [
            (labels, v)
            for labels, v in self.samples("sro_api_requests_total")
            if labels.get("code") == "403" and v > 0
        ]


def _assert_monitoring_reads_exported_metrics(incluster: InClusterOperator) -> None:
    """Every sro_* series the alerts and the dashboard query is one the operator exports."""
    monitoring = REPO / "manifests" / "monitoring"
    text = (monitoring / "prometheus_rule.yaml").read_text() + (
        monitoring / "dashboards" / "sro.json"
    ).read_text()
    wanted = set(re.findall(r"\bsro_[a-z_]+", text))
    with urllib.request.urlopen(f"http://127.0.0.1:{incluster.port}/metrics", timeout=5) as resp:
        exported = set(re.findall(r"^(sro_[a-z_]+)", resp.read().decode(), flags=re.MULTILINE))
    exported |= {re.sub(r"_(bucket|sum|count|created)$", "", name) for name in exported}
    missing = wanted - exported
    assert not missing, f"queried but not exported: {sorted(missing)}"


@pytest.fixture
def incluster(
    cluster: cluster_mod.Cluster, operator: Operator, tmp_path: Path
) -> Iterator[InClusterOperator]:
    """The in-cluster operator, with the session's kubeconfig operator stopped meanwhile."""
    deployment = _install_chart_without_workload(cluster)
    handle = InClusterOperator(cluster=cluster, deployment=deployment, workdir=tmp_path)
    operator.stop()
    try:
        handle.start()
        yield handle
    finally:
        handle.stop()
        print(f"in-cluster operator log: {handle.log_path}")
        operator.start()


async def test_the_deployment_settings_and_service_account_suffice_to_converge_and_tear_down_nvidia_gpu(
    cluster: cluster_mod.Cluster, incluster: InClusterOperator
) -> None:
    made = Made(cluster=cluster)
    try:
        pools = [
            {
                "count": 2,
                "kernel": "5.14.0-427.13.1.el9_4.x86_64",
                "os": {"id": "rhel", "versionId": "9.4"},
                "pci": ["10de"],
                "devices": {"nvidia.com/gpu": 8},
            },
            {
                "count": 2,
                "kernel": "5.15.0-105-generic",
                "os": {"id": "ubuntu", "versionId": "22.04"},
                "pci": ["10de"],
                "devices": {"nvidia.com/gpu": 8},
            },
        ]
        group, nodes = made.group("incluster", pools)
        assert len(nodes) == 4
        selector = {srs.GROUP_LABEL: group, srs.GPU_LABEL: "true"}
        priority = unique("incluster-prio")
        name = made.sr(
            srs.manifest(
                unique("incluster"),
                recipe="nvidia-gpu",
                node_selector=selector,
                extra_spec={
                    "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                    "priorityClasses": [{"name": priority, "value": 1000}],
                },
            )
        )

        # Leadership: the Lease in sro-system, through the Role's get/create/update.
        waiting.wait_for_sync(
            lambda: [v for _, v in incluster.samples("sro_leader")] == [1.0],
            timeout=60,
            message="the in-cluster operator to take the lease",
        )

        status = await srs.wait_ready(cluster, name, within=300)
        assert status["nodes"] == {"selected": 4, "complete": 4}, incluster.log_tail()
        for node in srs.nodes(cluster, selector):
            taints = {(t["key"], t.get("value"), t["effect"]) for t in node["spec"].get("taints") or []}
            assert ("nvidia.com/gpu", "present", "NoSchedule") in taints
            assert srs.sr_labels(node, name), f"no state labels on {node['metadata']['name']}"
        assert srs.owned(cluster, "roles", name, namespace=name), "the recipe's Role was not created"
        assert cluster.kubectl("get", "priorityclass", priority, check=False).returncode == 0
        events = cluster.kubectl_json("get", "events.events.k8s.io", "-n", "default")["items"]
        assert any((e.get("regarding") or {}).get("name") == name for e in events), (
            "the operator emitted no Event for the SpecialResource"
        )
        assert incluster.forbidden() == [], incluster.log_tail()
        _assert_monitoring_reads_exported_metrics(incluster)

        # Teardown: finalizer, node labels and taints, owned objects, the operand namespace.
        srs.delete(cluster, name)
        waiting.wait_for_sync(
            lambda: srs.get(cluster, name) is None,
            timeout=180,
            message="the operator to let the SpecialResource go",
        )
        made.srs.remove(name)
        for node in srs.nodes(cluster, {srs.GROUP_LABEL: group}):
            assert not srs.sr_labels(node, name)
            assert all(t["key"] != "nvidia.com/gpu" for t in node["spec"].get("taints") or [])
        waiting.wait_for_sync(
            lambda: cluster.kubectl("get", "priorityclass", priority, check=False).returncode != 0,
            timeout=60,
            message="the SpecialResource's PriorityClass to be deleted",
        )
        waiting.wait_for_sync(
            lambda: cluster.kubectl("get", "namespace", name, check=False).returncode != 0,
            timeout=120,
            message="the operand namespace to be deleted",
        )
        assert incluster.forbidden() == [], incluster.log_tail()
    finally:
        made.cleanup()
