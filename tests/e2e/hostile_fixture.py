"""The hostile-input suite's environment (``hostile.Env``): started for the first module
that asks for it, shared by every later one, stopped after the last.

The operator runs as a ServiceAccount bound to exactly the Deployment's ClusterRole
(``manifests/rbac/manager_role.yaml``), so a kind outside it is really refused a list,
and with leader election on, in a namespace of its own, so its renewals can be watched.
The session's operator (cluster-admin, no Lease) is stopped meanwhile: one writer at a
time; it is started again after the last hostile module. The SpecialResources a module
made go after it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import specialresources as srs
from hostile import GOOD_FILES, OPERATOR_NAMESPACE, UBUNTU, Env, short
from hostile_identity import service_account_kubeconfig
from hostile_monitors import HealthProbe, LeaseWatch
from operator_process import Operator
from support import cluster as cluster_mod
from support import waiting


def _start(cluster: cluster_mod.Cluster, session_operator: Operator, base: Path) -> Env:
    lease_namespace = short("sro-hx")
    tenant = short("hx-tenant")
    for ns in (lease_namespace, tenant):
        cluster.kubectl("create", "namespace", ns)
    cluster.kubectl("create", "namespace", OPERATOR_NAMESPACE, check=False)
    kubeconfig = service_account_kubeconfig(cluster, lease_namespace, base)
    group = short("hx")
    (node,) = cluster.add_nodes(srs.pool_inventory(group, [UBUNTU]))
    recipes = base / "recipes"
    recipes.mkdir()
    op = Operator(
        kubeconfig=kubeconfig,
        recipes_dir=recipes,
        log_dir=base,
        extra_args=["--leader-elect", "true", "--leader-elect-namespace", lease_namespace],
    )
    session_operator.stop()
    op.start()
    assert op.proc is not None
    waiting.wait_for_sync(
        lambda: any(n == "sro_leader" and v == 1 for n, _, v in op.metrics()),
        timeout=30,
        message="the hostile suite's operator took its Lease",
    )
    health = HealthProbe(f"http://127.0.0.1:{op.port}/healthz")
    lease = LeaseWatch(cluster, namespace=lease_namespace)
    env = Env(
        cluster=cluster,
        operator=op,
        lease_namespace=lease_namespace,
        group=group,
        node=node,
        tenant_namespace=tenant,
        health=health,
        lease=lease,
        pid=op.proc.pid,
    )
    health.start()
    lease.start()
    env.dir_recipe("hx-canary", GOOD_FILES)
    env.canary = env.sr(short("hx-canary"), "hx-canary")
    env.plant(env.canary)
    return env


def _stop(env: Env, session_operator: Operator) -> None:
    cluster = env.cluster
    try:
        env.remove_srs(list(env.srs_made))
    finally:
        # Every step runs whatever an earlier one raised: the suite's operator and its
        # monitors must never outlive it (they would reconcile the next tests' objects).
        with contextlib.ExitStack() as stack:
            stack.callback(env.operator.stop)
            stack.callback(env.lease.stop)
            stack.callback(env.health.stop)
            for stop in env.stops:
                stack.callback(stop)
        print(f"hostile suite: {env.summary()}; operator log {env.operator.log_path}")
        for name in env.recipe_configmaps:
            cluster.kubectl(
                "delete",
                "configmap",
                name,
                "-n",
                OPERATOR_NAMESPACE,
                "--ignore-not-found",
                "--wait=false",
                check=False,
            )
        for ns in (env.tenant_namespace, env.lease_namespace):
            cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)
        cluster.kubectl("delete", "clusterrolebinding", env.lease_namespace, check=False)
        cluster.delete_nodes([env.node])
        session_operator.start()


_SHARED: dict[str, Env] = {}


def _later_hostile_modules(request: pytest.FixtureRequest) -> bool:
    """Whether a test still to run after this module uses the suite's environment (then
    the operator stays). Asked of the tests themselves, not of file names: a later
    ``test_hostile_*`` file elsewhere (the CLI property suite) must not keep it running."""
    items = request.session.items
    here = request.node.path
    last = max(i for i, item in enumerate(items) if item.path == here)
    return any("hx" in getattr(item, "fixturenames", ()) for item in items[last + 1 :])


@pytest.fixture(scope="module", name="hx")
def hostile_env(
    request: pytest.FixtureRequest,
    cluster: cluster_mod.Cluster,
    crd: None,
    operator: Operator,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Env]:
    """The shared hostile-suite environment; the SpecialResources a module made go after it."""
    if "env" not in _SHARED:
        _SHARED["env"] = _start(cluster, operator, tmp_path_factory.mktemp("hostile"))
    env = _SHARED["env"]
    before = set(env.srs_made)
    try:
        yield env
        env.assert_healthy()
    finally:
        try:
            env.remove_srs([n for n in env.srs_made if n not in before])
        finally:
            if not _later_hostile_modules(request):
                del _SHARED["env"]
                _stop(env, operator)


__all__ = ["hostile_env"]
