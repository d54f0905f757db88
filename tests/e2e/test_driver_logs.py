"""``wait-for-logs`` on a realistic driver log: the ready line far from both ends.

Covers the contract's "sro reads the log's tail, however long the log, and remembers a
match": a driver that prints 64 KiB of build output, then its ready line, then 4 KiB more
completes its state; the same driver without the ready line does not, and the state says
it waits for the pattern. A match is remembered across a restart of the operator: the new
process has read no tail yet, and its first pass still resets nothing and writes nothing.
A log that cannot be read (a kubelet out of reach, an operator whose ClusterRole was
trimmed of ``pods/log``) keeps the state waiting, with the reason in its message and the
operator's log, until it can be read: then the state completes, with no restart.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import hostile_identity
import pytest
import specialresources as srs
from conftest import Made, unique
from operator_process import Operator
from support import waiting

pytestmark = pytest.mark.e2e

RECIPE = "description: a driver with a long build log\nnodeSelector: {}\nstates:\n  - name: state-driver\n"
READY = "driver module loaded, now waiting for signal"


def daemonset(log_text: str, *, name: str = "driver", wait_for: str = "module loaded, now waiting") -> str:
    annotations = {"sro.dev/wait-for-logs": wait_for} if wait_for else {}
    body = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": {"sim.sro.dev/logs": log_text}},
                "spec": {"containers": [{"name": name, "image": f"example.com/{name}:1"}]},
            },
        },
    }
    return json.dumps(body)  # JSON is YAML, and keeps the long value on one line


def build_output(size: int, prefix: str) -> list[str]:
    lines, total, i = [], 0, 0
    while total < size:
        line = f"{prefix} CC [M] drivers/accel/part{i:05d}.o -O2 -fno-strict-aliasing"
        lines.append(line)
        total += len(line) + 1
        i += 1
    return lines


UBUNTU = {"count": 1, "kernel": "5.15.0-105-generic", "os": {"id": "ubuntu", "versionId": "22.04"}}


async def test_a_ready_line_between_64_kib_of_build_output_and_4_kib_more_completes_the_state(
    made: Made, recipe_dir: Callable[..., Path]
) -> None:
    group, _ = made.group("log", [UBUNTU])
    text = "\\n".join([*build_output(64 * 1024, "build"), READY, *build_output(4 * 1024, "after")])
    recipe = unique("longlog")
    recipe_dir(recipe, {"recipe.yaml": RECIPE, "state-driver/daemonset.yaml": daemonset(text)})
    name = made.sr(srs.manifest(unique("longlog"), recipe=recipe, node_selector={srs.GROUP_LABEL: group}))
    status = await srs.wait_ready(made.cluster, name, within=120)
    assert status["nodes"] == {"selected": 1, "complete": 1}


async def test_a_driver_that_never_prints_its_ready_line_does_not_complete(
    made: Made, recipe_dir: Callable[..., Path]
) -> None:
    group, _ = made.group("log", [UBUNTU])
    text = "\\n".join(build_output(64 * 1024, "build"))
    recipe = unique("nolog")
    recipe_dir(recipe, {"recipe.yaml": RECIPE, "state-driver/daemonset.yaml": daemonset(text)})
    name = made.sr(srs.manifest(unique("nolog"), recipe=recipe, node_selector={srs.GROUP_LABEL: group}))

    def waiting_for_the_pattern() -> dict[str, object] | None:
        row = next(
            r for r in srs.status(made.cluster, name).get("states") or [] if r["name"] == "state-driver"
        )
        return row if "waiting for logs" in str(row.get("message")) else None

    row = await waiting.wait_for(
        waiting_for_the_pattern, timeout=90, message="the state waits for the pattern"
    )
    assert row["phase"] == "Progressing" and row["nodes"]["complete"] == 0
    assert srs.status(made.cluster, name)["phase"] != "Ready"


def log_reads(operator: Operator) -> float:
    """The log tails the operator has fetched (``pods/log`` GETs)."""
    return sum(
        v
        for n, labels, v in operator.metrics()
        if n == "sro_api_requests_total" and labels.get("resource") == "pods/log"
    )


async def test_a_waiting_drivers_log_is_read_on_its_own_clock_not_by_every_pass(
    made: Made, recipe_dir: Callable[..., Path], operator: Operator
) -> None:
    group, nodes = made.group("log", [UBUNTU])
    text = "\\n".join(build_output(16 * 1024, "build"))  # never its ready line
    recipe = unique("pollog")
    recipe_dir(recipe, {"recipe.yaml": RECIPE, "state-driver/daemonset.yaml": daemonset(text)})
    name = made.sr(srs.manifest(unique("pollog"), recipe=recipe, node_selector={srs.GROUP_LABEL: group}))

    def waiting_for_the_pattern() -> bool:
        rows = srs.status(made.cluster, name).get("states") or []
        return any(r["name"] == "state-driver" and "waiting for logs" in str(r.get("message")) for r in rows)

    await waiting.wait_for(waiting_for_the_pattern, timeout=90, message="the state waits for the pattern")
    assert log_reads(operator) >= 1
    # Ten passes in quick succession, each woken by a change to the node that is not the
    # driver's: none of them is a reason to read the tail again before its interval.
    reads, started = log_reads(operator), time.monotonic()
    for i in range(10):
        before = operator.reconciles()
        made.cluster.kubectl("label", "node", nodes[0], f"example.com/flap={i}", "--overwrite")
        await waiting.wait_for(
            lambda before=before: operator.reconciles() > before, timeout=30, interval=0.05, message="a pass"
        )
    elapsed = time.monotonic() - started
    again = log_reads(operator) - reads
    # At most one read per LOG_POLL_MIN (1 s), and one more for a read due as the window opened.
    assert again <= elapsed + 1, (again, elapsed)
    assert srs.status(made.cluster, name)["phase"] != "Ready"


async def test_a_restarted_operator_keeps_the_states_after_a_matched_driver_and_writes_nothing(
    made: Made, recipe_dir: Callable[..., Path], operator: Operator
) -> None:
    group, _ = made.group("log", [UBUNTU, UBUNTU])
    text = "\\n".join([*build_output(16 * 1024, "build"), READY, *build_output(1024, "after")])
    recipe = unique("relog")
    chain = RECIPE + "  - name: state-plugin\n"
    plugin = daemonset("plugin ready", name="plugin", wait_for="")
    files = {"recipe.yaml": chain, "state-driver/daemonset.yaml": daemonset(text)}
    recipe_dir(recipe, {**files, "state-plugin/daemonset.yaml": plugin})
    name = made.sr(srs.manifest(unique("relog"), recipe=recipe, node_selector={srs.GROUP_LABEL: group}))
    status = await srs.wait_ready(made.cluster, name, within=120)
    assert status["nodes"] == {"selected": 2, "complete": 2}

    operator.restart()
    await waiting.wait_for(
        operator.idle, timeout=60, interval=0.5, message="the restarted operator reconciled everything"
    )
    # The new process read no tail: each node records the pod whose log matched, so no
    # plugin label went, no pod was deleted, and no log was read again.
    assert operator.writes() == 0, [m for m in operator.metrics() if m[0] == "sro_api_requests_total"]
    reads = [
        v for n, labels, v in operator.metrics()
        if n == "sro_api_requests_total" and labels.get("resource") == "pods/log"
    ]  # fmt: skip
    assert sum(reads) == 0, reads
    assert srs.status(made.cluster, name)["phase"] == "Ready"
    drivers = {
        p["spec"]["nodeName"]: p["metadata"]["uid"]
        for p in made.cluster.kubectl_json("get", "pods", "-n", name, "-l", "app=driver")["items"]
    }
    assert len(drivers) == 2, drivers
    for node, uid in drivers.items():
        notes = made.cluster.kubectl_json("get", "node", node)["metadata"]["annotations"]
        assert notes[f"sro.dev/logs.{name}"] == uid


def _kubelet_port(made: Made, node: str, port: int | None = None) -> int:
    """The port the API server reaches ``node``'s kubelet on (its daemon endpoint); with
    ``port``, set it first."""
    if port is not None:
        patch = json.dumps({"status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}})
        made.cluster.kubectl("patch", "node", node, "--subresource=status", "--type=merge", "-p", patch)
    body = made.cluster.kubectl_json("get", "node", node)
    return int(body["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"])


def _ready_driver_sr(made: Made, recipe_dir: Callable[..., Path], group: str, prefix: str) -> str:
    """A SpecialResource on ``group`` whose driver prints its ready line after 4 KiB."""
    text = "\\n".join([*build_output(4 * 1024, "build"), READY])
    recipe = unique(prefix)
    recipe_dir(recipe, {"recipe.yaml": RECIPE, "state-driver/daemonset.yaml": daemonset(text)})
    return made.sr(srs.manifest(unique(prefix), recipe=recipe, node_selector={srs.GROUP_LABEL: group}))


async def _driver_row_saying(made: Made, name: str, *words: str) -> dict[str, object]:
    """The state-driver row of ``name``'s status once its message holds every one of
    ``words`` (in any case)."""

    def row_saying() -> dict[str, object] | None:
        rows = srs.status(made.cluster, name).get("states") or []
        row = next((r for r in rows if r["name"] == "state-driver"), None)
        message = str((row or {}).get("message")).lower()
        return row if row is not None and all(w in message for w in words) else None

    return await waiting.wait_for(row_saying, timeout=90, message=f"the state-driver row says {words}")


async def test_a_driver_whose_log_cannot_be_read_waits_and_its_state_says_why(
    made: Made, recipe_dir: Callable[..., Path], operator: Operator
) -> None:
    group, nodes = made.group("log", [UBUNTU])
    # The API server reads a pod's log from its node's kubelet: with the node's daemon
    # endpoint on a port nothing listens on, every read of it fails, as with a kubelet
    # out of reach.
    kubelet = _kubelet_port(made, nodes[0])
    assert _kubelet_port(made, nodes[0], 1) == 1
    name = _ready_driver_sr(made, recipe_dir, group, "deaflog")
    try:
        row = await _driver_row_saying(made, name, "could not be read")
    finally:
        assert _kubelet_port(made, nodes[0], kubelet) == kubelet
    message = str(row["message"])
    assert f"{nodes[0]}: waiting for logs of pod " in message and "driver-" in message
    assert row["phase"] == "Progressing" and row["nodes"]["complete"] == 0  # type: ignore[index]
    warned = [
        json.loads(line)
        for line in operator.log_path.read_text().splitlines()
        if "pod logs could not be read" in line
    ]
    assert any(str(w.get("pod", "")).startswith("driver-") and w.get("error") for w in warned), warned
    # The kubelet back in reach, the next read sees the line and the state completes.
    status = await srs.wait_ready(made.cluster, name, within=120)
    assert status["nodes"] == {"selected": 1, "complete": 1}


@pytest.fixture
def no_log_rights(
    made: Made, operator: Operator, tmp_path: Path
) -> Iterator[tuple[Operator, Callable[[], None]]]:
    """The session's operator replaced, for one test, by one running as a ServiceAccount
    whose ClusterRole is the Deployment's without ``pods/log`` (an administrator's trimmed
    copy), reading the same recipe directory; and a function that grants ``pods/log``
    back. The session's operator is started again after."""
    cluster = made.cluster
    namespace = unique("sro-nolog")
    role, grant = f"{namespace}-nolog", f"{namespace}-logs"
    cluster.kubectl("create", "namespace", namespace)
    trimmed = hostile_identity.manager_role_without(role, frozenset({"pods/log"}))
    cluster.kubectl("create", "-f", "-", input=json.dumps(trimmed))
    kubeconfig = hostile_identity.service_account_kubeconfig(cluster, namespace, tmp_path, cluster_role=role)

    def grant_logs() -> None:
        cluster.kubectl("create", "clusterrole", grant, "--verb=get", "--resource=pods/log")
        cluster.kubectl(
            "create", "clusterrolebinding", grant, f"--clusterrole={grant}",
            f"--serviceaccount={namespace}:{hostile_identity.ACCOUNT}",
        )  # fmt: skip

    deaf = Operator(kubeconfig=kubeconfig, recipes_dir=operator.recipes_dir, log_dir=tmp_path)
    operator.stop()
    try:
        deaf.start()
        yield deaf, grant_logs
    finally:
        try:
            made.cleanup()  # while this operator runs: it lets the SpecialResources go
            made.srs.clear()
            made.nodes.clear()
        finally:
            deaf.stop()
            for kind, name in (("clusterrolebinding", grant), ("clusterrole", grant)):
                cluster.kubectl("delete", kind, name, "--ignore-not-found", check=False)
            for kind, name in (("clusterrolebinding", namespace), ("clusterrole", role)):
                cluster.kubectl("delete", kind, name, "--ignore-not-found", check=False)
            cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
            operator.start()


async def test_a_driver_log_sro_may_not_read_keeps_its_state_waiting_and_says_it_is_forbidden(
    made: Made, recipe_dir: Callable[..., Path], no_log_rights: tuple[Operator, Callable[[], None]]
) -> None:
    deaf, grant_logs = no_log_rights
    group, nodes = made.group("log", [UBUNTU])
    name = _ready_driver_sr(made, recipe_dir, group, "rbaclog")
    row = await _driver_row_saying(made, name, "could not be read", "forbidden")
    assert f"{nodes[0]}: waiting for logs of pod " in str(row["message"]), row
    assert row["phase"] == "Progressing" and row["nodes"]["complete"] == 0  # type: ignore[index]
    lines = deaf.log_path.read_text().splitlines()
    warned = [json.loads(line) for line in lines if "pod logs could not be read" in line]
    forbidden = [w for w in warned if "forbidden" in str(w.get("error", "")).lower()]
    assert any(str(w.get("pod", "")).startswith("driver-") for w in forbidden), warned
    # The right granted back, the next read sees the line and the state completes: no restart.
    assert deaf.proc is not None
    pid = deaf.proc.pid
    grant_logs()
    status = await srs.wait_ready(made.cluster, name, within=120)
    assert status["nodes"] == {"selected": 1, "complete": 1}
    assert deaf.proc.pid == pid and deaf.proc.poll() is None


class Silent:
    """A port that takes connections and never answers: a kubelet that hangs (stuck, or on
    a node going away), which the API server waits out on every read it proxies there."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = int(self.server.getsockname()[1])
        self.held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._take, name="silent-kubelet", daemon=True)
        self._thread.start()

    def _take(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:  # closed
                return
            self.held.append(conn)  # kept open, never read nor written

    def close(self) -> None:
        self.server.close()
        for conn in self.held:
            conn.close()


async def test_a_driver_whose_kubelet_hangs_holds_up_no_other_nodes_states(
    made: Made, recipe_dir: Callable[..., Path]
) -> None:
    group, nodes = made.group("log", [{**UBUNTU, "count": 2}])
    hung, other = sorted(nodes)
    text = "\\n".join([*build_output(4 * 1024, "build"), READY])
    recipe = unique("hunglog")
    chain = RECIPE + "  - name: state-plugin\n"
    plugin = daemonset("plugin ready", name="plugin", wait_for="")
    files = {"recipe.yaml": chain, "state-driver/daemonset.yaml": daemonset(text)}
    recipe_dir(recipe, {**files, "state-plugin/daemonset.yaml": plugin})
    silent = Silent()
    kubelet = _kubelet_port(made, hung)
    try:
        assert _kubelet_port(made, hung, silent.port) == silent.port
        started = time.monotonic()
        name = made.sr(srs.manifest(unique("hunglog"), recipe=recipe, node_selector={srs.GROUP_LABEL: group}))

        def other_complete() -> bool:
            labels = made.cluster.kubectl_json("get", "node", other)["metadata"]["labels"]
            return labels.get(f"{name}.sro.dev/complete") == "true"

        # The other node's driver matches on its first read, then its plugin starts and
        # completes: passes that would each wait for the hung read (the API server gives
        # up on a TLS handshake after 10 s, and the operator tries a read 5 times) go on.
        await waiting.wait_for(other_complete, timeout=120, message="the other node complete")
        took = time.monotonic() - started
        assert silent.held, "the hung node's log was asked for"
        assert took < 30, f"the other node took {took:.1f}s while a read hung"
        row = next(r for r in srs.status(made.cluster, name)["states"] if r["name"] == "state-driver")
        assert row["nodes"] == {"complete": 1, "total": 2}, row
    finally:
        assert _kubelet_port(made, hung, kubelet) == kubelet
        silent.close()
    # Its kubelet back, the hung node's next read matches and it completes too.
    status = await srs.wait_ready(made.cluster, name, within=180)
    assert status["nodes"] == {"selected": 2, "complete": 2}
