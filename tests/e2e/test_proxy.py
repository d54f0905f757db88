"""Proxy settings given to the operator reach every container of ``sro.dev/proxy`` objects.

``sro run`` is restarted with ``SRO_HTTP_PROXY``, ``SRO_HTTPS_PROXY`` and ``SRO_NO_PROXY``
in its environment (the fallbacks of ``--http-proxy`` and friends). A recipe with a
proxy-annotated DaemonSet (an init container and two containers, one of which sets its
own ``HTTP_PROXY``), a proxy-annotated per-node Pod and an unannotated DaemonSet is run:
the pods of the annotated objects carry all six variables (upper and lower case) in every
container, the cluster's values replacing the recipe's; the unannotated one's carry none.
The operator is restarted without the settings afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import specialresources as srs
from conftest import Made, unique
from operator_process import Operator

pytestmark = pytest.mark.e2e

RHEL = {"kernel": "5.14.0-427.13.1.el9_4.x86_64", "os": {"id": "rhel", "versionId": "9.4"}}
PROXY = {
    "HTTP_PROXY": "http://proxy.e2e.example:3128",
    "HTTPS_PROXY": "http://proxy.e2e.example:3129",
    "NO_PROXY": ".cluster.local,10.0.0.0/8",
}
EXPECTED = {**PROXY, **{k.lower(): v for k, v in PROXY.items()}}

RECIPE = {
    "recipe.yaml": """\
description: proxy injection test
nodeSelector:
  e2e.sro.dev/never: "set"
states:
  - name: state-fetch
  - name: state-check
""",
    "state-fetch/proxied.yaml": """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: fetcher
  labels:
    app: fetcher
  annotations:
    sro.dev/proxy: "true"
spec:
  selector:
    matchLabels:
      app: fetcher
  template:
    metadata:
      labels:
        app: fetcher
    spec:
      initContainers:
        - name: download
          image: registry.example.com/fetch:1
      containers:
        - name: main
          image: registry.example.com/fetch:1
          env:
            - name: HTTP_PROXY
              value: http://recipe-default:8080
            - name: KEEP_ME
              value: "yes"
        - name: sidecar
          image: registry.example.com/sidecar:1
""",
    "state-fetch/plain.yaml": """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: offline
  labels:
    app: offline
spec:
  selector:
    matchLabels:
      app: offline
  template:
    metadata:
      labels:
        app: offline
    spec:
      containers:
        - name: main
          image: registry.example.com/offline:1
""",
    "state-check/pod.yaml": """\
apiVersion: v1
kind: Pod
metadata:
  name: check
  annotations:
    sro.dev/per-node: "true"
    sro.dev/proxy: "true"
spec:
  restartPolicy: Never
  containers:
    - name: check
      image: registry.example.com/check:1
""",
}


@pytest.fixture
def proxied_operator(operator: Operator, monkeypatch: pytest.MonkeyPatch) -> Iterator[Operator]:
    """The session's operator, restarted with proxy settings, and restarted without them after."""
    for name, value in PROXY.items():
        monkeypatch.setenv(f"SRO_{name}", value)
    operator.restart()
    try:
        yield operator
    finally:
        monkeypatch.undo()
        operator.restart()


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env") or ()}


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod["spec"]
    return [*(spec.get("initContainers") or ()), *spec["containers"]]


def _owner(pod: dict[str, Any]) -> str:
    owners = pod["metadata"].get("ownerReferences") or []
    return next((o["name"] for o in owners if o.get("kind") == "DaemonSet"), "")


async def test_proxy_settings_reach_every_container_of_annotated_objects_and_no_other(
    made: Made, proxied_operator: Operator, recipe_dir: Callable[[str, dict[str, str]], Path]
) -> None:
    group, nodes = made.group("proxy", [{"count": 2, **RHEL}])
    recipe = unique("proxy-recipe")
    recipe_dir(recipe, RECIPE)
    name = made.sr(srs.manifest(unique("proxy"), recipe=recipe, node_selector={srs.GROUP_LABEL: group}))
    await srs.wait_ready(made.cluster, name, within=180)

    pods = [p for p in srs.pods(made.cluster, name) if p["spec"].get("nodeName") in nodes]
    fetchers = [p for p in pods if _owner(p) == "fetcher"]
    offline = [p for p in pods if _owner(p) == "offline"]
    checks = [p for p in pods if p["metadata"]["name"].startswith("check-")]
    assert len(fetchers) == len(offline) == len(checks) == 2, [p["metadata"]["name"] for p in pods]

    for pod in (*fetchers, *checks):
        containers = _containers(pod)
        for container in containers:
            env = _env(container)
            assert {k: env.get(k) for k in EXPECTED} == EXPECTED, (pod["metadata"]["name"], container["name"])
        assert {c["name"] for c in containers} >= (
            {"download", "main", "sidecar"} if pod in fetchers else {"check"}
        )
    for pod in fetchers:
        main = next(c for c in pod["spec"]["containers"] if c["name"] == "main")
        names = [e["name"] for e in main["env"]]
        assert names.count("HTTP_PROXY") == 1, "the cluster's value replaces the recipe's"
        assert _env(main)["KEEP_ME"] == "yes", "other variables stay"
    for pod in offline:
        for container in _containers(pod):
            assert not set(_env(container)) & set(EXPECTED), (pod["metadata"]["name"], container["name"])
