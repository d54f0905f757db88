"""Builders for hook and render tests: small in-memory recipes, SpecialResources and nodes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import MappingProxyType
from typing import Any

import pytest

from sro.hooks import pipeline
from sro.model import desired, views
from sro.model import specialresource as srmodel
from sro.render import kinds, values
from sro.render import recipe as recipe_

RHEL = ("5.14.0-427.13.1.el9_4.x86_64", "rhel", "9.4")
UBUNTU = ("5.15.0-105-generic", "ubuntu", "22.04")
GPU = {"feature.node.kubernetes.io/pci-10de.present": "true"}


def make_recipe(states: dict[str, dict[str, str]], *, header: str = "", name: str = "demo") -> recipe_.Recipe:
    """A recipe from ``{state: {file: text}}``; states run in the order given."""
    state_list = "".join(f"  - name: {s}\n" for s in states)
    files = {
        "recipe.yaml": (header or "nodeSelector:\n  feature.node.kubernetes.io/pci-10de.present: 'true'\n")
        + "states:\n"
        + state_list
    }
    for state, docs in states.items():
        files.update({f"{state}/{f}": text for f, text in docs.items()})
    return recipe_.load(name, files, source=recipe_.Source.DIRECTORY, origin=name)


def make_sr(name: str = "gpu", **spec: Any) -> srmodel.SpecialResource:
    return srmodel.parse(
        {
            "apiVersion": "sro.dev/v1alpha1",
            "kind": "SpecialResource",
            "metadata": {"name": name, "uid": "uid-1"},
            "spec": spec,
        }
    )


def make_node(name: str, group: tuple[str, str, str] = RHEL, **labels: str) -> views.NodeView:
    kernel, os_id, version = group
    all_labels = {
        views.KERNEL_LABEL: kernel,
        views.OS_ID_LABEL: os_id,
        views.OS_VERSION_LABEL: version,
        **GPU,
        **labels,
    }
    return views.NodeView(
        name=name,
        labels=MappingProxyType(all_labels),
        kernel_version=kernel,
        architecture="amd64",
        ready=True,
    )


def render(
    sr: srmodel.SpecialResource,
    recipe: recipe_.Recipe,
    nodes: Sequence[views.NodeView],
    *,
    last: desired.DesiredState | None = None,
    **kw: Any,
) -> desired.DesiredState:
    args: dict[str, Any] = {
        "cluster_version": "1.36",
        "operator": values.OperatorInfo(namespace="sro-system", image="sro:test", version="0.1.0"),
        "proxy": values.ProxySettings(),
        "is_namespaced": kinds.builtin_is_namespaced,
        "is_served": kinds.builtin_is_served,
    }
    args.update(kw)
    return pipeline.render_desired(sr, recipe, nodes, env=pipeline.Environment(**args), last=last)


@pytest.fixture
def build() -> Callable[..., Any]:
    return make_recipe


def daemonset(name: str = "driver", *, annotations: str = "", extra: str = "") -> str:
    return f"""apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {name}
  labels:
    app: {name}
  annotations:
    x: "y"
{annotations}spec:
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
{extra}      containers:
        - name: c
          image: img
"""


def pod(name: str = "check", *, annotations: str = "") -> str:
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
  annotations:
    x: "y"
{annotations}spec:
  restartPolicy: Never
  containers:
    - name: c
      image: img
"""


def configmap(name: str = "cm", *, annotations: str = "", api: str = "v1", kind: str = "ConfigMap") -> str:
    return f"""apiVersion: {api}
kind: {kind}
metadata:
  name: {name}
  annotations:
    x: "y"
{annotations}"""
