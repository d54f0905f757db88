"""The discovery snapshot against the real API server: what ``sro run`` and ``sro render --live`` see.

Covers: one read gives the server's version and every served kind with its scope, as
kubectl's own discovery lists them; a full re-read within ``min_interval`` is skipped;
a CRD installed after a read is in the next read and not in the old snapshot.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from support import waiting

from sro import settings
from sro.apply import ssa
from sro.kube import discovery, http
from sro.model import desired

pytestmark = pytest.mark.integration


def _connect(cluster: Any) -> Any:
    return http.Api.connect(settings.ApiSettings(kubeconfig=str(cluster.kubeconfig)))


def _kubectl_resources(cluster: Any, *, namespaced: bool) -> set[str]:
    out = cluster.kubectl("api-resources", f"--namespaced={str(namespaced).lower()}", "-o", "name").stdout
    return {line.strip() for line in out.splitlines() if line.strip()}


def _names(facts: discovery.ClusterFacts, *, namespaced: bool) -> set[str]:
    return {
        f"{r.plural}.{r.group}" if r.group else r.plural
        for kinds in facts.group_versions.values()
        for r in kinds.values()
        if r.namespaced == namespaced
    }


async def test_one_read_holds_the_version_and_every_served_kind_with_its_scope(cluster: Any) -> None:
    async with await _connect(cluster) as api:
        facts = await discovery.read_facts(api)
    server = cluster.kubectl_json("version")["serverVersion"]
    assert facts.version.as_tuple() == (server["gitVersion"], server["major"], server["minor"])
    assert facts.is_namespaced("v1", "Pod") is True and facts.is_namespaced("v1", "Node") is False
    assert facts.is_served("apps/v1", "DaemonSet") and not facts.is_served("apps/v1", "Widget")
    # kubectl lists each resource once, under its group's preferred version.
    assert _kubectl_resources(cluster, namespaced=True) <= _names(facts, namespaced=True)
    assert _kubectl_resources(cluster, namespaced=False) <= _names(facts, namespaced=False)
    assert facts.read_at > 0 and not facts.unavailable


async def test_a_reread_is_skipped_within_the_interval_and_finds_a_crd_installed_since(
    cluster: Any, crd_group: str
) -> None:
    async with await _connect(cluster) as api:
        d = discovery.Discovery(api)
        assert await d.read()
        first = d.facts
        assert not await d.read(min_interval=3600), "read moments ago: skipped"
        assert d.facts is first
        writer = ssa.Writer(api=api, discovery=d)
        await writer.apply(_crd(crd_group))
        try:

            async def served() -> bool:
                await d.read()
                return d.facts.is_namespaced(f"{crd_group}/v1", "Gadget") is True

            await waiting.wait_for(served, timeout=60, message="the new kind is in a fresh read")
            assert not first.is_served(f"{crd_group}/v1", "Gadget"), "an old snapshot never changes"
            assert d.facts.read_at > first.read_at
        finally:
            await writer.delete(
                desired.ObjectRef(
                    api_version="apiextensions.k8s.io/v1",
                    kind="CustomResourceDefinition",
                    namespace="",
                    name=f"gadgets.{crd_group}",
                )
            )


@pytest.fixture
def crd_group() -> str:
    return f"d{uuid.uuid4().hex[:8]}.discovery.sro.dev"


def _crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }
