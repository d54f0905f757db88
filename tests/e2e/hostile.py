"""One operator for the hostile-input suite, and monitors that watch it for the suite's whole run.

A hostile input can hurt the operator without failing its own case: a render that holds
the event loop delays ``/healthz`` and the Lease renewal, a crash restarts the process, a
stuck worker starves every other SpecialResource, a careless delete removes a tenant's
object. So every case in ``test_hostile_*.py`` ends with ``Env.after_case``, which asks
the monitors that ran in the background since the suite began: same pid and alive,
``/healthz`` always answered within a second, the Lease renewed within its renew
deadline with no change of holder, no planted foreign object touched, and a canary
SpecialResource still reconciling a spec change within ten seconds.

``hostile_fixture`` starts the operator and its monitors once for all the suite's
modules, and stops them after the last.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import specialresources as srs
from hostile_monitors import HealthProbe, LeaseWatch
from operator_process import Operator
from support import cluster as cluster_mod
from support import waiting

OPERATOR_NAMESPACE = "sro-system"  # sro run's --namespace: where ConfigMap recipes live
RECIPE_LABEL = "sro.dev/recipe"
RENEW_DEADLINE = 10.0  # settings.LeaseSettings.renew_deadline
CANARY_WITHIN = 10.0  # seconds the canary may take to reconcile a spec change
OWNED_KINDS = (
    "configmaps,serviceaccounts,services,daemonsets,deployments,jobs,pods,roles,rolebindings,"
    "clusterroles,clusterrolebindings,priorityclasses"
)
UBUNTU = {"count": 1, "kernel": "5.15.0-105-generic", "os": {"id": "ubuntu", "versionId": "22.04"}}

GOOD_RECIPE = """\
description: a good drop-in recipe
nodeSelector:
  kubernetes.io/os: linux
defaults:
  touch: "0"
states:
  - name: state-config
"""
GOOD_CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: greeting
data:
  touch: "{{ set.touch }}"
"""
GOOD_FILES = {"recipe.yaml": GOOD_RECIPE, "state-config/configmap.yaml": GOOD_CONFIGMAP}


def short(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@dataclass
class Planted:
    """A foreign object planted to prove sro neither deletes nor adopts it."""

    kind: str
    name: str
    namespace: str
    uid: str
    resource_version: str


# -- the environment ---------------------------------------------------------------------------


@dataclass
class Env:
    """The suite's operator, its monitors, its canary and what the cases made."""

    cluster: cluster_mod.Cluster
    operator: Operator
    lease_namespace: str
    group: str
    node: str
    tenant_namespace: str
    health: HealthProbe
    lease: LeaseWatch
    pid: int
    canary: str = ""
    touches: int = 0
    canary_seconds: list[float] = field(default_factory=list)  # how long each spec change took
    srs_made: list[str] = field(default_factory=list)
    recipe_configmaps: list[str] = field(default_factory=list)
    planted: list[Planted] = field(default_factory=list)
    stops: list[Callable[[], None]] = field(default_factory=list)

    @property
    def selector(self) -> dict[str, str]:
        return {srs.GROUP_LABEL: self.group}

    # -- recipes and SpecialResources -------------------------------------------------------

    def dir_recipe(self, name: str, files: Mapping[str, str | bytes]) -> Path:
        """A drop-in recipe directory (relative path -> text or bytes), replacing any before."""
        root = self.operator.recipes_dir / name
        for rel, content in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
        return root

    def cm_recipe(self, name: str, files: Mapping[str, str]) -> str:
        """A ConfigMap recipe ``name`` in the operator's namespace (created or replaced)."""
        data = {rel.replace("/", "__"): text for rel, text in files.items()}
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE, "labels": {RECIPE_LABEL: name}},
            "data": data,
        }
        self.cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(body))
        if name not in self.recipe_configmaps:
            self.recipe_configmaps.append(name)
        return f"configmap/{OPERATOR_NAMESPACE}/{name}"

    def sr(self, name: str, recipe: str, **spec: Any) -> str:
        body = srs.manifest(
            name,
            recipe=recipe,
            node_selector=spec.pop("node_selector", self.selector),
            set_values=spec.pop("set_values", None),
            extra_spec=spec,
        )
        self.srs_made.append(name)
        srs.create(self.cluster, body)
        return name

    def sr_text(self, name: str, text: str) -> str:
        """A SpecialResource from raw JSON text (what ``json.dumps`` cannot write)."""
        self.srs_made.append(name)
        self.cluster.kubectl("create", "-f", "-", input=text)
        return name

    def patch_sr(self, name: str, patch: Mapping[str, Any]) -> None:
        self.cluster.kubectl("patch", "sr", name, "--type=merge", "-p", json.dumps(patch))

    def status(self, name: str) -> dict[str, Any]:
        """The status alone (a body nested past Python's JSON recursion limit stays unread)."""
        out = self.cluster.kubectl("get", "sr", name, "-o", "jsonpath={.status}").stdout
        found: dict[str, Any] = json.loads(out) if out.strip() else {}
        return found

    def exists(self, name: str) -> bool:
        return self.cluster.kubectl("get", "sr", name, "-o", "name", check=False).returncode == 0

    async def degraded(self, name: str, reason: str, *, within: float = 30) -> dict[str, Any]:
        """The Degraded condition once it is True with ``reason`` (Ready False with it too)."""
        seen: list[Any] = []

        def check() -> dict[str, Any] | None:
            status = self.status(name)
            seen[:] = [status.get("conditions")]
            cond = srs.condition(status, "Degraded")
            ready = srs.condition(status, "Ready")
            if cond.get("status") == "True" and cond.get("reason") == reason == ready.get("reason"):
                return cond
            return None

        try:
            found: dict[str, Any] = await waiting.wait_for(
                check, timeout=within, interval=0.3, message=f"{name} Degraded with {reason}"
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}; its last conditions: {seen}") from None
        return found

    async def ready(self, *names: str, within: float = 30) -> None:
        def check() -> list[str]:
            return [n for n in names if not srs.ready_condition(self.status(n))]

        await waiting.wait_for(lambda: not check(), timeout=within, interval=0.3, message=f"Ready: {names}")

    def written(self, name: str, *, state: str | None = None) -> list[str]:
        """Objects labelled as ``name``'s (of ``state`` if given; planted ones aside) and its node labels."""
        selector = f"{srs.OWNER}={name}" + (f",sro.dev/state={state}" if state else "")
        found = self.cluster.kubectl_json("get", OWNED_KINDS, "-A", "-l", selector)["items"]
        planted = {(p.namespace, p.name) for p in self.planted}
        out = [
            f"{o['kind']}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}"
            for o in found
            if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) not in planted
        ]
        if state is None:
            for node in srs.nodes(self.cluster, self.selector):
                out += [f"node label {k}" for k in srs.sr_labels(node, name)]
        return out

    def namespace_exists(self, name: str) -> bool:
        return self.cluster.kubectl("get", "namespace", name, check=False).returncode == 0

    def assert_nothing_written(self, name: str) -> None:
        assert self.written(name) == [], f"{name} wrote something: {self.written(name)}"
        assert not self.namespace_exists(name), f"the operand namespace {name} was created"

    # -- foreign objects ----------------------------------------------------------------------

    def plant(
        self,
        owner: str,
        *,
        name: str | None = None,
        data: Mapping[str, str] | None = None,
        finalizers: list[str] | None = None,
        namespace: str | None = None,
    ) -> Planted:
        """A tenant's ConfigMap labelled ``sro.dev/owner: owner``, without sro's reference."""
        meta: dict[str, Any] = {
            "name": name or short("tenant"),
            "labels": {srs.OWNER: owner},
            "namespace": namespace or self.tenant_namespace,
        }
        if finalizers:
            meta["finalizers"] = finalizers
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(data or {"k": "v"})}
        made = json.loads(
            self.cluster.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(body)).stdout
        )
        planted = Planted(
            "configmap",
            meta["name"],
            meta["namespace"],
            made["metadata"]["uid"],
            made["metadata"]["resourceVersion"],
        )
        self.planted.append(planted)
        return planted

    def untouched(self, *planted: Planted) -> None:
        """Each planted object is still there, unwritten and unowned (one list per namespace)."""
        for namespace in sorted({p.namespace for p in planted}):
            template = (
                "{range .items[*]}{.metadata.name} {.metadata.uid} {.metadata.resourceVersion} "
                '{.metadata.ownerReferences}{"\\n"}{end}'
            )
            out = self.cluster.kubectl(
                "get", "configmaps", "-n", namespace, "-o", f"jsonpath={template}"
            ).stdout
            live = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}
            for one in (p for p in planted if p.namespace == namespace):
                assert one.name in live, f"{namespace}/{one.name} was deleted"
                assert live[one.name] == [one.uid, one.resource_version], (
                    f"{namespace}/{one.name} was written to or made again: {live[one.name]}"
                )

    # -- what every case ends with --------------------------------------------------------------

    def assert_healthy(self) -> None:
        op = self.operator
        assert op.alive() and op.proc is not None and op.proc.pid == self.pid and op.starts == 1, (
            f"the operator restarted or died:\n{op.log_tail()}"
        )
        assert self.health.probes > 0 and not self.health.failures, (
            f"/healthz was slow or failed ({self.health.probes} probes): {self.health.failures[:10]}"
        )
        assert self.lease.max_gap < RENEW_DEADLINE, f"a Lease renewal gap of {self.lease.max_gap:.1f}s"
        assert self.lease.since_last() < RENEW_DEADLINE, f"no renewal for {self.lease.since_last():.1f}s"
        assert len(self.lease.holders()) == 1, f"the Lease changed holder: {self.lease.holders()}"
        self.untouched(*self.planted)

    async def canary_reconciles(self) -> None:
        """Change the canary's spec; its new generation is reconciled and applied within 10 s."""
        self.touches += 1
        value = str(self.touches)
        self.patch_sr(self.canary, {"spec": {"set": {"touch": value}}})
        generation = int(
            self.cluster.kubectl("get", "sr", self.canary, "-o", "jsonpath={.metadata.generation}").stdout
        )

        def applied() -> bool:
            status = self.status(self.canary)
            made = self.cluster.kubectl_json("get", "configmap", "greeting", "-n", self.canary)
            return status.get("observedGeneration", 0) >= generation and made["data"]["touch"] == value

        started = time.monotonic()
        try:
            await waiting.wait_for(
                applied,
                timeout=CANARY_WITHIN,
                interval=0.25,
                message=f"the canary reconciled generation {generation}",
            )
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.lines_about(self.canary)}") from None
        self.canary_seconds.append(time.monotonic() - started)
        print(f"the canary reconciled generation {generation} in {self.canary_seconds[-1]:.1f}s")

    def lines_about(self, name: str, *, last: int = 40) -> str:
        """The operator's last log lines that name ``name``, and its last lines of all."""
        about = [line for line in self.operator.log_tail(20_000).splitlines() if name in line]
        return (
            f"the operator's last {last} lines about {name}:\n"
            + "\n".join(about[-last:])
            + f"\nits last lines:\n{self.operator.log_tail(last)}"
        )

    async def after_case(self) -> None:
        self.assert_healthy()
        await self.canary_reconciles()
        self.assert_healthy()

    def summary(self) -> str:
        return (
            f"healthz max {self.health.max_latency:.3f}s over {self.health.probes} probes; "
            f"lease max renew gap {self.lease.max_gap:.1f}s over {len(self.lease.renewals)} renewals; "
            f"slow /healthz answers: {self.health.slow[-20:]}; canary max "
            f"{max(self.canary_seconds, default=0.0):.1f}s over {len(self.canary_seconds)} spec changes "
            f"(slowest: {[round(s, 1) for s in sorted(self.canary_seconds)[-5:]]})"
        )

    def remove_srs(self, names: list[str]) -> None:
        """Delete SpecialResources and wait until the operator let them go (forced if it never does)."""
        if names:
            self.cluster.kubectl("delete", "sr", *names, "--ignore-not-found", "--wait=false", check=False)
        for name in names:
            try:
                waiting.wait_for_sync(
                    lambda name=name: not self.exists(name),
                    timeout=60,
                    interval=0.3,
                    message=f"SpecialResource {name} deleted",
                )
            except AssertionError:
                patch = json.dumps({"metadata": {"finalizers": None}})
                self.cluster.kubectl("patch", "sr", name, "--type=merge", "-p", patch, check=False)
                raise
            finally:
                if name in self.srs_made:
                    self.srs_made.remove(name)


__all__ = ["GOOD_CONFIGMAP", "GOOD_FILES", "GOOD_RECIPE", "Env", "short"]
