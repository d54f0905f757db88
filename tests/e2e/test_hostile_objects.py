"""Hostile objects in the cluster, through the running operator: none ends it, none is taken.

Covers objects that once ended the process (a SpecialResource whose ``spec.set`` nests
1,100 levels, a labelled ConfigMap of 900 KiB on one watch line) and ownership by
reference: a labelled tenant object is neither deleted nor adopted (by reconciles and by
teardown), an existing object or namespace with the wanted name is refused, a labelled
object holding its own finalizer does not hold a SpecialResource's deletion, and a
flood of labelled foreign ConfigMaps costs bounded memory. Every case ends with the
suite's monitors (``hostile.Env.after_case``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import specialresources as srs
from hostile import GOOD_FILES, Env, short
from hostile_fixture import hostile_env
from support import waiting

from sro.plan import teardown

pytestmark = pytest.mark.e2e
__all__ = ["hostile_env"]

CLUSTERROLE = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {name}
rules:
  - apiGroups: [""]
    resources: ["configmaps"]
    verbs: ["get"]
"""
FLOOD = 300
FLOOD_BYTES = 4096


def nested(depth: int) -> str:
    """JSON nested ``depth`` levels (``json.dumps`` cannot write it)."""
    return '{"a":' * depth + "1" + "}" * depth


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1])


def cached(hx: Env, resource: str) -> float:
    return sum(
        v
        for n, labels, v in hx.operator.metrics()
        if n == "sro_cache_objects" and labels.get("resource") == resource
    )


async def test_a_specialresource_nested_1100_deep_is_refused_and_its_fix_converges(hx: Env) -> None:
    recipe = short("hx-deep")
    hx.dir_recipe(recipe, GOOD_FILES)
    name = short("hx-deep")
    head = json.dumps(srs.manifest(name, recipe=recipe, node_selector=hx.selector))[:-2]
    hx.sr_text(name, head + ', "set": ' + nested(1100) + "}}")
    cond = await hx.degraded(name, "RecipeInvalid")
    assert "spec.set is nested deeper than 64 levels" in cond["message"], cond
    hx.assert_nothing_written(name)
    await hx.after_case()
    hx.patch_sr(name, {"spec": {"set": {"a": None, "touch": "shallow"}}})
    await hx.ready(name)
    made = hx.cluster.kubectl_json("get", "configmap", "greeting", "-n", name)
    assert made["data"] == {"touch": "shallow"}


async def test_a_labelled_configmap_of_900_kib_on_one_line_is_neither_fatal_nor_adopted(hx: Env) -> None:
    before = cached(hx, "configmaps")
    hx.plant(hx.canary, data={"v": "x" * (900 * 1024)})
    await waiting.wait_for(
        lambda: cached(hx, "configmaps") == before + 1,
        timeout=10,
        message="the operator's ConfigMap cache holds the big object",
    )
    await hx.after_case()


async def test_a_labelled_tenant_object_survives_reconciles_and_teardown_unadopted(hx: Env) -> None:
    recipe = short("hx-own")
    hx.dir_recipe(recipe, GOOD_FILES)
    name = hx.sr(short("hx-own"), recipe)
    planted = hx.plant(name, name="greeting")  # the very name the recipe makes, in a tenant's namespace
    await hx.ready(name)
    hx.patch_sr(name, {"spec": {"set": {"touch": "again"}}})
    await waiting.wait_for(
        lambda: hx.status(name).get("observedGeneration") == 2,
        timeout=10,
        message="the change was reconciled",
    )
    hx.untouched(planted)

    def said() -> list[dict[str, Any]]:
        return [e for e in srs.events(hx.cluster, name) if e.get("reason") == "ForeignObjectIgnored"]

    await waiting.wait_for(said, timeout=10, message="a ForeignObjectIgnored Event")
    assert len(said()) == 1, "said once, however many passes saw it"
    assert f"{planted.namespace}/{planted.name}" in said()[0]["note"]
    hx.remove_srs([name])
    hx.untouched(planted)
    await hx.after_case()


async def test_an_existing_cluster_object_with_the_wanted_name_is_refused_never_adopted(hx: Env) -> None:
    role = short("hx-theirs")
    hx.cluster.kubectl("create", "-f", "-", input=CLUSTERROLE.format(name=role))
    try:
        before = hx.cluster.kubectl_json("get", "clusterrole", role)["metadata"]
        recipe = short("hx-adopt")
        files = {**GOOD_FILES, "state-config/clusterrole.yaml": CLUSTERROLE.format(name=role)}
        hx.cm_recipe(recipe, files)
        name = hx.sr(short("hx-adopt"), recipe)
        cond = await hx.degraded(name, "ApplyFailed")
        assert f"ClusterRole/{role}" in cond["message"] and "never adopts" in cond["message"], cond
        after = hx.cluster.kubectl_json("get", "clusterrole", role)["metadata"]
        assert after["resourceVersion"] == before["resourceVersion"] and not after.get("ownerReferences")
        assert hx.written(name) == [], "the refused state was written in part"
        await hx.after_case()
        # The fix: the recipe names a role of its own; the SpecialResource converges.
        own = CLUSTERROLE.format(name=role + "-own")
        hx.cm_recipe(recipe, {**files, "state-config/clusterrole.yaml": own})
        await hx.ready(name)
    finally:
        hx.cluster.kubectl("delete", "clusterrole", role, "--ignore-not-found", check=False)


async def test_an_existing_namespace_is_never_adopted_and_survives_the_teardown(hx: Env) -> None:
    recipe = short("hx-ns")
    hx.cm_recipe(recipe, GOOD_FILES)
    name = short("hx-ns")
    hx.cluster.kubectl("create", "namespace", name)
    try:
        before = hx.cluster.kubectl_json("get", "namespace", name)["metadata"]
        hx.sr(name, recipe)
        cond = await hx.degraded(name, "NamespaceInUse")
        assert name in cond["message"], cond
        assert hx.written(name) == []
        await hx.after_case()
        hx.remove_srs([name])
        after = hx.cluster.kubectl_json("get", "namespace", name)["metadata"]
        assert after["uid"] == before["uid"] and not after.get("deletionTimestamp")
        assert not after.get("ownerReferences") and srs.OWNER not in (after.get("labels") or {})
    finally:
        hx.cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


async def test_a_flood_of_labelled_foreign_configmaps_costs_bounded_memory(hx: Env) -> None:
    flood = short("hx-flood")
    hx.cluster.kubectl("create", "namespace", flood)
    try:
        before_rss, before_cached = rss_kib(hx.pid), cached(hx, "configmaps")
        items = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"f-{i}", "namespace": flood, "labels": {srs.OWNER: hx.canary}},
                "data": {"v": "y" * FLOOD_BYTES},
            }
            for i in range(FLOOD)
        ]
        kubectl = [str(hx.cluster.kubectl_path), f"--kubeconfig={hx.cluster.kubeconfig}", "create", "-f", "-"]

        async def create(part: list[dict[str, object]]) -> int:
            proc = await asyncio.create_subprocess_exec(
                *kubectl, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL
            )
            await proc.communicate(json.dumps({"apiVersion": "v1", "kind": "List", "items": part}).encode())
            return await proc.wait()

        # Four clients at once, as a busy tenant would.
        assert await asyncio.gather(*(create(items[i::4]) for i in range(4))) == [0, 0, 0, 0]
        await waiting.wait_for(
            lambda: cached(hx, "configmaps") >= before_cached + FLOOD,
            timeout=30,
            message="the flood reached the operator's cache",
        )
        await hx.after_case()  # every flooded object woke the canary; it still answers in 10 s
        grown = rss_kib(hx.pid) - before_rss
        data = FLOOD * FLOOD_BYTES // 1024
        assert grown < 48 * 1024, f"the operator grew {grown} KiB for {data} KiB of data"
        owners = hx.cluster.kubectl(
            "get",
            "configmaps",
            "-n",
            flood,
            "-l",
            f"{srs.OWNER}={hx.canary}",
            "-o",
            "jsonpath={.items[*].metadata.ownerReferences}",
        ).stdout
        assert owners.strip() == "", "a flooded object was adopted"
        listed = hx.cluster.kubectl("get", "configmaps", "-n", flood, "-o", "name").stdout.split()
        assert len([c for c in listed if c.startswith("configmap/f-")]) == FLOOD, "a flooded one was deleted"
    finally:
        hx.cluster.kubectl("delete", "namespace", flood, "--wait=false", check=False)
    await waiting.wait_for(
        lambda: cached(hx, "configmaps") <= before_cached,
        timeout=60,
        message="the flood left the operator's cache",
    )


@dataclass(frozen=True)
class Held:
    """A SpecialResource deleted while a tenant's object with a finalizer sits in its namespace."""

    sr: str
    configmap: str
    deleted_at: float


@pytest.fixture(scope="module", autouse=True)
def held_in_the_operand_namespace(hx: Env) -> Iterator[Held]:
    """Started before the module's first case, so the namespace's slow end overlaps them."""
    recipe = short("hx-fin")
    hx.cm_recipe(recipe, GOOD_FILES)
    name = hx.sr(short("hx-fin"), recipe)
    waiting.wait_for_sync(lambda: srs.ready_condition(hx.status(name)), timeout=30, message=f"{name} Ready")
    held = hold(hx, name, namespace=name)
    hx.cluster.kubectl("delete", "sr", name, "--wait=false")
    try:
        yield Held(sr=name, configmap=held, deleted_at=time.monotonic())
    finally:
        release(hx, held, namespace=name)


def hold(hx: Env, owner: str, *, namespace: str) -> str:
    """A ConfigMap labelled as ``owner``'s, holding a finalizer of its own."""
    held = short("held")
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": held,
            "namespace": namespace,
            "labels": {srs.OWNER: owner},
            "finalizers": ["example.com/hold"],
        },
    }
    hx.cluster.kubectl("create", "-f", "-", input=json.dumps(body))
    return held


def release(hx: Env, held: str, *, namespace: str) -> None:
    hx.cluster.kubectl(
        "patch",
        "configmap",
        held,
        "-n",
        namespace,
        "--type=merge",
        "-p",
        json.dumps({"metadata": {"finalizers": None}}),
        check=False,
    )
    hx.cluster.kubectl("delete", "configmap", held, "-n", namespace, "--wait=false", check=False)


def assert_held_untouched(hx: Env, held: str, *, namespace: str) -> None:
    live = hx.cluster.kubectl_json("get", "configmap", held, "-n", namespace)["metadata"]
    assert live["finalizers"] == ["example.com/hold"] and not live.get("ownerReferences"), live


async def test_a_labelled_object_with_its_own_finalizer_elsewhere_does_not_hold_the_deletion(hx: Env) -> None:
    recipe = short("hx-fin")
    hx.cm_recipe(recipe, GOOD_FILES)
    name = hx.sr(short("hx-fin"), recipe)
    await hx.ready(name)
    held = hold(hx, name, namespace=hx.tenant_namespace)
    try:
        hx.remove_srs([name])  # fails if the operator never lets the SpecialResource go
        assert_held_untouched(hx, held, namespace=hx.tenant_namespace)
        await hx.after_case()
    finally:
        release(hx, held, namespace=hx.tenant_namespace)


async def test_a_labelled_object_with_its_own_finalizer_in_the_operand_namespace_does_not_hold_the_deletion(
    hx: Env, held_in_the_operand_namespace: Held
) -> None:
    held = held_in_the_operand_namespace
    # The operator waits a while for a namespace it is deleting (teardown.NAMESPACE_RELEASE).
    release_after = teardown.NAMESPACE_RELEASE.total_seconds()
    left = held.deleted_at + release_after + 30 - time.monotonic()
    await waiting.wait_for(
        lambda: not hx.exists(held.sr),
        timeout=max(left, 5),
        interval=0.5,
        message=f"{held.sr} let go while its namespace is held",
    )
    assert_held_untouched(hx, held.configmap, namespace=held.sr)
    await hx.after_case()
