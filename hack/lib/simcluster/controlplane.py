"""Bringing the control plane up, checking it, restarting parts of it and taking it down.

The order and flags are those verified in docs (shared design: local-cluster.md):
etcd, then kube-apiserver, then controller-manager, scheduler, kwok and the device
simulator side by side. Every port is a free loopback port chosen at ``up`` and kept
in ``state.json``, so several clusters (one per ``SRO_CLUSTER_DIR``) run side by side.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import os
import shutil
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from simcluster import audit, daemons, kwok_config, layout, pki

COMPONENTS = ("etcd", "apiserver", "controller-manager", "scheduler", "kwok", "devsim")
PORTS = ("etcd", "etcd_peer", "apiserver", "controller_manager", "scheduler", "kwok")
START_TIMEOUT = 90.0


class ClusterError(RuntimeError):
    """Something about the cluster's processes that the user has to look at."""


POD_SECURITY_LEVELS = ("privileged", "baseline", "restricted")


@dataclasses.dataclass(frozen=True)
class State:
    """What ``up`` decided and later commands need: the ports, the Pod Security level
    kube-apiserver enforces by default ("" for none: every namespace is privileged), and
    how many finished pods the cluster holds before the pod garbage collector deletes the
    oldest (0: kube-controller-manager's default, 12,500), and whether kube-apiserver serves
    ``/debug/pprof`` (``profiling``: what a benchmark reads its CPU profile from), kept so a
    restarted component runs the same."""

    ports: dict[str, int]
    pod_security: str = ""
    pod_gc_threshold: int = 0
    profiling: bool = False
    build_seconds: tuple[float, float] = (1.0, 4.0)
    """How long a known driver image builds before it prints its ready line: each pod
    draws from this range (``pod_logs``)."""

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def etcd(self) -> str:
        return f"http://127.0.0.1:{self.ports['etcd']}"

    @staticmethod
    def load(run: layout.RunDir) -> State | None:
        try:
            fields = json.loads(run.state.read_text())
            low, high = fields.pop("build_seconds", State.build_seconds)
            return State(**fields, build_seconds=(float(low), float(high)))
        except FileNotFoundError:
            return None

    def save(self, run: layout.RunDir) -> None:
        run.state.write_text(json.dumps(dataclasses.asdict(self), indent=2))


def free_ports(names: tuple[str, ...]) -> dict[str, int]:
    """Distinct free loopback ports (all sockets held open until every port is picked)."""
    socks = []
    try:
        for _ in names:
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return {name: s.getsockname()[1] for name, s in zip(names, socks, strict=True)}
    finally:
        for s in socks:
            s.close()


def commands(run: layout.RunDir, state: State) -> dict[str, list[str]]:
    """The command line of every component."""
    p = state.ports
    keys = pki.Pki(run.pki)
    peer = f"http://127.0.0.1:{p['etcd_peer']}"
    common_kube = [
        "--bind-address=127.0.0.1",
        "--leader-elect=false",
        "--kube-api-qps=5000",
        "--kube-api-burst=10000",
    ]
    return {
        "etcd": [
            str(layout.binary("etcd")),
            "--name=sim",
            f"--data-dir={run.etcd_data}",
            f"--listen-client-urls={state.etcd}",
            f"--advertise-client-urls={state.etcd}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=sim={peer}",
            "--unsafe-no-fsync",
            "--quota-backend-bytes=8589934592",
            "--log-level=warn",
        ],
        "apiserver": [
            str(layout.binary("kube-apiserver")),
            f"--etcd-servers={state.etcd}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={p['apiserver']}",
            f"--tls-cert-file={keys.serving_cert}",
            f"--tls-private-key-file={keys.serving_key}",
            f"--client-ca-file={keys.ca_cert}",
            f"--kubelet-client-certificate={keys.client_cert('admin')}",
            f"--kubelet-client-key={keys.client_key('admin')}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={keys.sa_pub}",
            f"--service-account-signing-key-file={keys.sa_key}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=Node,RBAC",
            "--allow-privileged=true",
            "--enable-admission-plugins=ExtendedResourceToleration,NodeRestriction",
            "--kubelet-preferred-address-types=InternalIP",
            f"--profiling={'true' if state.profiling else 'false'}",
            *audit.apiserver_flags(policy=run.audit_policy, log=run.audit_log),
            *([f"--admission-control-config-file={run.admission_config}"] if state.pod_security else []),
        ],
        "controller-manager": [
            str(layout.binary("kube-controller-manager")),
            *common_kube,
            f"--kubeconfig={run.kubeconfig_for('controller-manager')}",
            f"--authentication-kubeconfig={run.kubeconfig_for('controller-manager')}",
            f"--authorization-kubeconfig={run.kubeconfig_for('controller-manager')}",
            f"--secure-port={p['controller_manager']}",
            f"--service-account-private-key-file={keys.sa_key}",
            f"--root-ca-file={keys.ca_cert}",
            f"--cluster-signing-cert-file={keys.ca_cert}",
            f"--cluster-signing-key-file={keys.ca_key}",
            "--use-service-account-credentials=true",
            "--node-monitor-grace-period=3m20s",
            "--controllers=*",
            *([f"--terminated-pod-gc-threshold={state.pod_gc_threshold}"] if state.pod_gc_threshold else []),
            "--profiling=false",
        ],
        "scheduler": [
            str(layout.binary("kube-scheduler")),
            *common_kube,
            f"--kubeconfig={run.kubeconfig_for('scheduler')}",
            f"--authentication-kubeconfig={run.kubeconfig_for('scheduler')}",
            f"--authorization-kubeconfig={run.kubeconfig_for('scheduler')}",
            f"--secure-port={p['scheduler']}",
            "--profiling=false",
        ],
        "kwok": [
            str(layout.binary("kwok")),
            f"--kubeconfig={run.kubeconfig_for('kwok')}",
            f"--config={run.kwok / 'kwok.yaml'}",
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            "--node-ip=127.0.0.1",
            f"--node-port={p['kwok']}",
            f"--server-address=127.0.0.1:{p['kwok']}",
            # kwok renews each node's Lease every quarter of this: 5,000 nodes cost ~170
            # writes/s instead of a kubelet's 500; well inside the 200 s grace period.
            "--node-lease-duration-seconds=120",
            "--cidr=10.64.0.0/12",
            "--enable-crds=Logs",
        ],
        "devsim": [sys.executable, "-m", "simcluster", "devsim"],
    }


def _get(url: str, *, context: ssl.SSLContext | None = None, timeout: float = 2.0) -> int:
    try:
        with urllib.request.urlopen(url, context=context, timeout=timeout) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except (urllib.error.URLError, OSError, TimeoutError):
        return 0


def admin_context(run: layout.RunDir) -> ssl.SSLContext:
    keys = pki.Pki(run.pki)
    context = ssl.create_default_context(cafile=str(keys.ca_cert))
    context.load_cert_chain(str(keys.client_cert("admin")), str(keys.client_key("admin")))
    return context


def _insecure() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def health_check(run: layout.RunDir, state: State, name: str) -> Callable[[], bool]:
    """A quick yes/no probe of one component."""
    p = state.ports
    if name == "etcd":
        return lambda: _get(f"{state.etcd}/health") == 200
    if name == "apiserver":
        context = admin_context(run)
        return lambda: _get(f"{state.server}/readyz", context=context) == 200
    if name in ("controller-manager", "scheduler"):
        port = p[name.replace("-", "_")]
        return lambda: _get(f"https://127.0.0.1:{port}/healthz", context=_insecure()) == 200
    if name == "kwok":
        return lambda: _get(f"http://127.0.0.1:{p['kwok']}/healthz") == 200
    if name == "devsim":
        return (run.root / "devsim.ready").exists
    raise ClusterError(f"unknown component {name!r}; one of {', '.join(COMPONENTS)}")


def tail(path: str | Path, lines: int = 25) -> str:
    with contextlib.suppress(FileNotFoundError):
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    return ""


def wait_healthy(
    run: layout.RunDir, state: State, names: list[str], *, timeout: float = START_TIMEOUT
) -> None:
    """Waits until every named component answers its probe; fails early if one exits."""
    probes = {n: health_check(run, state, n) for n in names}
    pending = dict(probes)
    start = time.monotonic()
    while pending:
        for name, probe in list(pending.items()):
            record = daemons.load(run.pids, name)
            if record is None or not daemons.alive(record):
                log = record.log if record else run.logs / f"{name}.log"
                raise ClusterError(f"{name} exited during start-up; last lines of {log}:\n{tail(log)}")
            if probe():
                del pending[name]
                print(f"  {name} healthy after {time.monotonic() - start:.1f}s", flush=True)
        if time.monotonic() - start > timeout:
            raise ClusterError(f"not healthy after {timeout:.0f}s: {', '.join(pending)} (see {run.logs})")
        if pending:
            time.sleep(0.1)


def start_component(run: layout.RunDir, state: State, name: str) -> daemons.Record:
    env = dict(os.environ)
    env["SRO_CLUSTER_DIR"] = str(run.root)
    env["PYTHONPATH"] = str(layout.HACK / "lib")
    if name == "apiserver":
        # Written at every start, so a run directory from before the audit log existed
        # gets one on its next restart instead of an apiserver that cannot start.
        audit.write_policy(run.audit_policy)
    if name == "kwok":
        # kwok always reads ~/.kwok/kwok.yaml first; a developer's own must not leak in.
        env["HOME"] = str(run.kwok)
    return daemons.start(
        name=name, argv=commands(run, state)[name], pid_dir=run.pids, log=run.logs / f"{name}.log", env=env
    )


def running(run: layout.RunDir) -> bool:
    """True if a cluster was started in this run directory and all its processes live."""
    records = daemons.load_all(run.pids)
    names = {r.name for r in records}
    return State.load(run) is not None and names >= set(COMPONENTS) and all(daemons.alive(r) for r in records)


# kube-apiserver stops listening at once on SIGTERM but may then linger for half a
# minute draining watches; nothing is lost by not waiting (the data is in etcd).
GRACE = {"apiserver": 3.0}


def stop(run: layout.RunDir, record: daemons.Record) -> None:
    daemons.stop(record, pid_dir=run.pids, grace=GRACE.get(record.name, 10.0))


def stop_all(run: layout.RunDir) -> list[str]:
    """Stops every recorded process, newest component first; returns their names."""
    records = {r.name: r for r in daemons.load_all(run.pids)}
    order = [n for n in reversed(COMPONENTS) if n in records] + [n for n in records if n not in COMPONENTS]
    for name in order:
        stop(run, records[name])
    return order


def remove(run: layout.RunDir) -> None:
    """Deletes the run directory, after making sure nothing recorded in it still runs."""
    if any(daemons.alive(r) for r in daemons.load_all(run.pids)):
        raise ClusterError(f"processes recorded in {run.pids} still run; not removing {run.root}")
    shutil.rmtree(run.root, ignore_errors=True)


def admission_config(level: str) -> dict[str, Any]:
    """kube-apiserver's AdmissionConfiguration: the PodSecurity plugin enforcing, auditing
    and warning at ``level`` in every namespace that does not say otherwise by its labels
    (as a hardened cluster does); only kube-system is exempt."""
    defaults: dict[str, str] = {}
    for mode in ("enforce", "audit", "warn"):
        defaults[mode] = level
        defaults[f"{mode}-version"] = "latest"
    return {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AdmissionConfiguration",
        "plugins": [
            {
                "name": "PodSecurity",
                "configuration": {
                    "apiVersion": "pod-security.admission.config.k8s.io/v1",
                    "kind": "PodSecurityConfiguration",
                    "defaults": defaults,
                    "exemptions": {"usernames": [], "runtimeClasses": [], "namespaces": ["kube-system"]},
                },
            }
        ],
    }


def prepare(
    run: layout.RunDir,
    *,
    pod_security: str = "",
    pod_gc_threshold: int = 0,
    profiling: bool = False,
    build_seconds: tuple[float, float] = State.build_seconds,
) -> State:
    """A fresh run directory: ports, PKI, kubeconfigs, kwok config, kubectl link, and the
    admission configuration when ``pod_security`` names a default level."""
    run.root.mkdir(parents=True, exist_ok=True)
    for d in (run.logs, run.pids, run.pod_logs, run.bin):
        d.mkdir(parents=True, exist_ok=True)
    if pod_security and pod_security not in POD_SECURITY_LEVELS:
        raise ClusterError(f"pod security level {pod_security!r}: one of {', '.join(POD_SECURITY_LEVELS)}")
    if pod_gc_threshold < 0:
        raise ClusterError(f"pod GC threshold {pod_gc_threshold}: 0 (the default) or more")
    if not 0 <= build_seconds[0] <= build_seconds[1]:
        raise ClusterError(f"build seconds {build_seconds[0]:g}-{build_seconds[1]:g}: 0 <= MIN <= MAX")
    state = State(
        ports=free_ports(PORTS),
        pod_security=pod_security,
        pod_gc_threshold=pod_gc_threshold,
        profiling=profiling,
        build_seconds=build_seconds,
    )
    if pod_security:
        run.admission_config.write_text(yaml.safe_dump(admission_config(pod_security), sort_keys=False))
    state.save(run)
    keys = pki.Pki(run.pki)
    from simcluster import certs  # noqa: PLC0415 - cryptography is slow to import; only up needs it

    certs.generate(keys)
    pki.write_kubeconfig(run.kubeconfig, pki=keys, who="admin", server=state.server)
    for who in ("controller-manager", "scheduler", "kwok"):
        pki.write_kubeconfig(run.kubeconfig_for(who), pki=keys, who=who, server=state.server)
    kwok_config.write(run)
    link = run.bin / "kubectl"
    link.unlink(missing_ok=True)
    link.symlink_to(layout.binary("kubectl"))
    return state


def etcd_compact(state: State) -> int:
    """Compacts etcd at its current revision (old resourceVersions then answer 410); returns it."""

    def post(path: str, body: dict[str, object]) -> dict[str, object]:
        req = urllib.request.Request(
            state.etcd + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            result: dict[str, object] = json.loads(resp.read())
            return result

    header = post("/v3/kv/range", {"key": base64.b64encode(b"/").decode(), "limit": 1})["header"]
    assert isinstance(header, dict)
    revision = int(header["revision"])
    post("/v3/kv/compaction", {"revision": revision, "physical": True})
    return revision
