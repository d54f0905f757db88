"""Kernel and OS identity of nodes, and the kernel groups kernel-affine objects follow.

A driver is built for one kernel on one OS release, so nodes are grouped by that pair.
NFD labels are preferred (they are what a DaemonSet can select on); a node without them
falls back to what its kubelet reports in ``status.nodeInfo``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sro.model import desired, views

_KERNEL = re.compile(r"(?P<major>\d+)\.(?P<minor>\d+)(?:\.(?P<patch>\d+))?(?P<rest>.*)")
_ARCH_SUFFIXES = ("x86_64", "aarch64", "ppc64le", "s390x", "i686", "armv7hl")
_GO_ARCH = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x", "386": "i686"}

# PRETTY_NAME prefixes a kubelet reports in nodeInfo.osImage, and the os-release ID they mean.
_OS_IMAGES = (
    ("red hat enterprise linux coreos", "rhcos"),
    ("red hat enterprise linux", "rhel"),
    ("ubuntu", "ubuntu"),
    ("centos stream", "centos"),
    ("centos", "centos"),
    ("rocky linux", "rocky"),
    ("almalinux", "almalinux"),
    ("debian", "debian"),
    ("suse linux enterprise", "sles"),
    ("amazon linux", "amzn"),
    ("fedora coreos", "fedora"),
    ("fedora", "fedora"),
    ("flatcar", "flatcar"),
)
_VERSION = re.compile(r"(\d+(?:\.\d+)?)")
_SUSE_SP = re.compile(r"(\d+)\s+SP(\d+)", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class KernelInfo:
    """The template values of one kernel (``kernel.*`` in kernel-affine documents)."""

    full: str
    version: str
    major: int
    minor: int
    patch: int
    release: str
    arch: str

    def values(self) -> dict[str, object]:
        return {
            "full": self.full,
            "version": self.version,
            "major": self.major,
            "minor": self.minor,
            "patch": self.patch,
            "release": self.release,
            "arch": self.arch,
        }


def parse_kernel(full: str, *, architecture: str = "") -> KernelInfo:
    """Split ``5.14.0-427.13.1.el9_4.x86_64`` into version, release and arch.

    The arch comes from the string's suffix when it has one, else from the node's
    ``nodeInfo.architecture`` (Go names mapped to kernel names), else x86_64.
    """
    match = _KERNEL.match(full)
    arch = _GO_ARCH.get(architecture, architecture) or "x86_64"
    if match is None:
        return KernelInfo(full=full, version=full, major=0, minor=0, patch=0, release="", arch=arch)
    major, minor, patch = int(match["major"]), int(match["minor"]), int(match["patch"] or 0)
    release = match["rest"].removeprefix("-").removeprefix("+")
    for suffix in _ARCH_SUFFIXES:
        if release.endswith("." + suffix):
            release, arch = release[: -len(suffix) - 1], suffix
            break
    version = f"{major}.{minor}.{patch}"
    return KernelInfo(
        full=full, version=version, major=major, minor=minor, patch=patch, release=release, arch=arch
    )


def os_values(os: desired.OsRelease) -> dict[str, str]:
    """The template values of one OS release (``os.*`` in kernel-affine documents)."""
    return {"id": os.id, "version_id": os.version_id, "major": os.major, "minor": os.minor, "tag": os.tag}


def parse_os_image(os_image: str) -> desired.OsRelease:
    """An os-release ID and VERSION_ID guessed from a PRETTY_NAME such as ``Ubuntu 22.04.4 LTS``."""
    lowered = os_image.lower()
    os_id = next((ident for prefix, ident in _OS_IMAGES if lowered.startswith(prefix)), "")
    if not os_id:
        os_id = re.sub(r"[^a-z0-9]", "", lowered.split(" ", 1)[0]) or "unknown"
    if os_id == "sles" and (sp := _SUSE_SP.search(os_image)):
        return desired.OsRelease(id=os_id, version_id=f"{sp[1]}.{sp[2]}")
    version = _VERSION.search(os_image)
    return desired.OsRelease(id=os_id, version_id=version[1] if version else "")


def node_os(node: views.NodeView) -> desired.OsRelease:
    """The node's OS release: NFD labels first, then ``nodeInfo.osImage``."""
    os_id = node.labels.get(views.OS_ID_LABEL, "")
    version = node.labels.get(views.OS_VERSION_LABEL, "")
    if os_id and version:
        return desired.OsRelease(id=os_id, version_id=version)
    return parse_os_image(node.os_image)


def node_group(node: views.NodeView) -> desired.KernelGroup:
    """The kernel group a node belongs to."""
    info = parse_kernel(node.kernel, architecture=node.architecture)
    return desired.KernelGroup(kernel=node.kernel, os=node_os(node), arch=info.arch)


def group_nodes(nodes: Iterable[views.NodeView]) -> Mapping[str, desired.KernelGroup]:
    """Each node's kernel group, by node name (nodes without any kernel are left out).

    The nodes of one group share one instance: every pass looks each node's group up in
    mappings keyed by group, and an instance found by identity is not compared field by
    field."""
    out: dict[str, desired.KernelGroup] = {}
    one: dict[desired.KernelGroup, desired.KernelGroup] = {}
    for n in sorted(nodes, key=lambda n: n.name):
        if n.kernel:
            group = node_group(n)
            out[n.name] = one.setdefault(group, group)
    return out


def group_selector(group: desired.KernelGroup, members: Iterable[views.NodeView]) -> dict[str, str]:
    """Node labels that select exactly the group's nodes: the kernel, and the OS labels
    when every member carries them (a node known only from nodeInfo has none)."""
    selector = {views.KERNEL_LABEL: group.kernel}
    listed = list(members)
    if listed and all(
        n.labels.get(views.OS_ID_LABEL) == group.os.id
        and n.labels.get(views.OS_VERSION_LABEL) == group.os.version_id
        for n in listed
    ):
        selector[views.OS_ID_LABEL] = group.os.id
        selector[views.OS_VERSION_LABEL] = group.os.version_id
    return selector
