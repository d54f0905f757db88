"""The render memo's key: equal ``render_inputs`` must mean an equal render, and every
change a render can see must change the key (else the engine would apply a stale render)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from types import MappingProxyType
from typing import Any

import pytest
from conftest import UBUNTU, make_node, make_recipe, make_sr, render

from sro.engine import compute
from sro.hooks import pipeline
from sro.model import views
from sro.render import kinds, values

pytestmark = pytest.mark.unit

DS = """apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: driver
  annotations:
    sro.dev/kernel-affine: "true"
spec:
  selector: {matchLabels: {app: driver}}
  template:
    metadata: {labels: {app: driver}}
    spec:
      containers:
        - name: c
          image: "driver:{{ kernel.full }}-{{ set.tag | default('x') }}"
"""
POD = """apiVersion: v1
kind: Pod
metadata:
  name: check
  annotations:
    sro.dev/per-node: "true"
spec:
  restartPolicy: Never
  containers: [{name: c, image: "check:{{ sr.metadata.get('labels', {}).get('flavour', 'plain') }}"}]
"""


def _env(**kw: Any) -> pipeline.Environment:
    args: dict[str, Any] = {
        "cluster_version": "1.36",
        "operator": values.OperatorInfo(namespace="sro-system", image="sro:test", version="0.1.0"),
        "proxy": values.ProxySettings(),
        "is_namespaced": kinds.builtin_is_namespaced,
        "is_served": kinds.builtin_is_served,
    }
    args.update(kw)
    return pipeline.Environment(**args)


RECIPE = make_recipe({"driver": {"ds.yaml": DS}, "check": {"pod.yaml": POD}})
NODES = (make_node("a"), make_node("b"), make_node("c", UBUNTU))


def _inputs(sr: Any = None, nodes: Any = NODES, *, facts: object = None, **kw: Any) -> tuple[object, ...]:
    return pipeline.render_inputs(sr or make_sr(), RECIPE, nodes, env=_env(**kw), facts=facts)


def _with_labels(node: views.NodeView, **labels: str) -> views.NodeView:
    return replace(node, labels=MappingProxyType({**node.labels, **labels}))


def test_a_node_advancing_through_states_changes_nothing_a_render_reads() -> None:
    advanced = (_with_labels(NODES[0], **{"gpu.sro.dev/driver": "ready", "gpu.sro.dev/complete": "true"}),)
    assert _inputs(nodes=advanced + NODES[1:]) == _inputs()
    assert render(make_sr(), RECIPE, advanced + NODES[1:]) == render(make_sr(), RECIPE, NODES)


@pytest.mark.parametrize(
    "change",
    [
        "kernel",
        "os",
        "node-added",
        "node-unselected",
        "set",
        "sr-label",
        "proxy",
        "facts",
        "keep-off",
    ],
)
def test_every_change_a_render_sees_changes_the_inputs(change: str) -> None:
    sr, nodes, kw = make_sr(), NODES, {}
    if change == "kernel":
        nodes = (_with_labels(NODES[0], **{views.KERNEL_LABEL: "5.14.0-500.el9.x86_64"}), *NODES[1:])
    elif change == "os":
        nodes = (_with_labels(NODES[0], **{views.OS_VERSION_LABEL: "9.5"}), *NODES[1:])
    elif change == "node-added":
        nodes = (*NODES, make_node("d"))
    elif change == "node-unselected":
        unselected = _with_labels(NODES[0], **{"feature.node.kubernetes.io/pci-10de.present": "false"})
        nodes = (unselected, *NODES[1:])
    elif change == "set":
        sr = make_sr(set={"tag": "y"})
    elif change == "sr-label":
        body = dict(sr.body)
        body["metadata"] = {**body["metadata"], "labels": {"flavour": "spicy"}}
        sr = replace(sr, body=body)
    elif change == "proxy":
        kw["proxy"] = values.ProxySettings(http="http://proxy:3128")
    elif change == "facts":
        kw["facts"] = object()
    elif change == "keep-off":
        kw["keep_off"] = frozenset({"a"})
    assert _inputs(sr, nodes, **kw) != _inputs()


def test_the_engine_renders_again_only_when_the_inputs_change() -> None:
    env = _env()
    first = asyncio.run(compute.render(make_sr(), RECIPE, NODES, env=env))
    advanced = (_with_labels(NODES[0], **{"gpu.sro.dev/driver": "ready"}), *NODES[1:])
    again = asyncio.run(compute.render(make_sr(), RECIPE, advanced, env=env, last=first))
    assert again is first
    moved = (_with_labels(NODES[0], **{views.KERNEL_LABEL: "5.14.0-500.el9.x86_64"}), *NODES[1:])
    changed = asyncio.run(compute.render(make_sr(), RECIPE, moved, env=env, last=first))
    assert changed is not first
    assert changed.state != first.state
    assert changed.state == render(make_sr(), RECIPE, moved)
