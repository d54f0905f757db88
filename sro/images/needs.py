"""Which images a rendered SpecialResource needs per kernel group: what is checked before a
per-kernel DaemonSet is created or a node moves to a new image.

Only kernel-affine documents (the copies the kernel-affine hook made, one per kernel and
OS group) are collected: their images are the ones named by kernel, and so the ones that
may not exist yet; the others do not change with a kernel and are pulled the usual way.
Each ``Need`` carries the pod spec and namespace its image is pulled with, since those
decide the pull secrets (``secrets.read``). Pure: ``sro preflight`` and the operator ask
the same question of the same render.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from sro.hooks import base, builds, podspec
from sro.model import desired, views
from sro.model import inventory as inventory_


@dataclass(frozen=True, kw_only=True)
class Need:
    """One image one kernel group of a SpecialResource needs, in one state."""

    sr: str
    state: str
    image: str
    kernel_group: desired.KernelGroup
    namespace: str
    pod_spec: Mapping[str, Any]


def kernel_images(state: desired.DesiredState) -> list[Need]:
    """The container and init container images of the kernel-affine documents of ``state``
    (and the base images a build Job names in ``sro.dev/build-from``), once per (kernel
    group, state, image), in document order."""
    found: dict[tuple[str, str, str], Need] = {}
    for obj in state.objects:
        group = obj.kernel_group
        if group is None or not podspec.runs_pods(obj.kind):
            continue
        spec = podspec.pod_spec(base.plain_copy(dict(obj.body))) or {}
        named = [str(c.get("image") or "") for c in podspec.containers(spec)]
        for image in [*named, *builds.bases(obj)]:  # a build's base images are its inputs too
            key = (group.key, obj.state, image)
            if image and key not in found:
                found[key] = Need(
                    sr=state.sr_name,
                    state=obj.state,
                    image=image,
                    kernel_group=group,
                    namespace=obj.ref.namespace or state.namespace,
                    pod_spec=spec,
                )
    return list(found.values())


def synthetic_node(
    *, kernel: str, os: desired.OsRelease, selector: Mapping[str, str], arch: str, name: str = ""
) -> views.NodeView:
    """A node on ``kernel`` and ``os`` that ``selector`` selects: the group being asked
    about (``sro preflight``, ``spec.preflight``); ``name`` when several are asked at once."""
    name = name or f"preflight-{os.id}{os.version_id}".lower().replace("_", "-")
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        **inventory_.kernel_labels(kernel),
        **inventory_.os_labels(os.id, os.version_id),
        **selector,
    }
    return views.NodeView(
        name=name,
        labels=MappingProxyType(labels),
        ready=True,
        kernel_version=kernel,
        os_image=inventory_.os_image(os.id, os.version_id),
        architecture=arch,
    )
