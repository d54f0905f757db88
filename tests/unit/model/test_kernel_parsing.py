"""Kernel strings, OS images and kernel groups of nodes (sro.model.kernels).

Covers the kernel parsing table of the contract (§4), arch from the string or from
nodeInfo, OS from NFD labels with the osImage fallback, and the group selector.
"""

from __future__ import annotations

from types import MappingProxyType

import pytest

from sro.model import desired, kernels, views

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("full", "arch_info", "expected"),
    [
        ("5.14.0-427.13.1.el9_4.x86_64", "", ("5.14.0", 5, 14, 0, "427.13.1.el9_4", "x86_64")),
        ("5.15.0-1045-nvidia", "amd64", ("5.15.0", 5, 15, 0, "1045-nvidia", "x86_64")),
        ("5.15.0-1045-nvidia", "arm64", ("5.15.0", 5, 15, 0, "1045-nvidia", "aarch64")),
        ("4.18.0-513.5.1.el8_9.aarch64", "amd64", ("4.18.0", 4, 18, 0, "513.5.1.el8_9", "aarch64")),
        ("6.8.0-45-generic", "", ("6.8.0", 6, 8, 0, "45-generic", "x86_64")),
        ("6.1.112", "s390x", ("6.1.112", 6, 1, 112, "", "s390x")),
        ("6.6", "", ("6.6.0", 6, 6, 0, "", "x86_64")),
        ("5.14.0-284.30.1.el9_2.ppc64le", "", ("5.14.0", 5, 14, 0, "284.30.1.el9_2", "ppc64le")),
    ],
)
def test_kernel_strings_split_into_version_release_and_arch(
    full: str, arch_info: str, expected: tuple[object, ...]
) -> None:
    info = kernels.parse_kernel(full, architecture=arch_info)
    assert (info.version, info.major, info.minor, info.patch, info.release, info.arch) == expected
    assert info.full == full


def test_an_unparseable_kernel_keeps_its_text_as_version() -> None:
    info = kernels.parse_kernel("custom")
    assert (info.version, info.major, info.release) == ("custom", 0, "")


@pytest.mark.parametrize(
    ("image", "os_id", "version"),
    [
        ("Red Hat Enterprise Linux 9.4 (Plow)", "rhel", "9.4"),
        ("Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)", "rhcos", "415.92"),
        ("Ubuntu 22.04.4 LTS", "ubuntu", "22.04"),
        ("Debian GNU/Linux 12 (bookworm)", "debian", "12"),
        ("SUSE Linux Enterprise Server 15 SP5", "sles", "15.5"),
        ("Rocky Linux 9.3 (Blue Onyx)", "rocky", "9.3"),
        ("Amazon Linux 2", "amzn", "2"),
    ],
)
def test_os_images_map_to_os_release_ids(image: str, os_id: str, version: str) -> None:
    assert kernels.parse_os_image(image) == desired.OsRelease(id=os_id, version_id=version)


def node(
    name: str, *, labels: dict[str, str] | None = None, kernel: str = "", image: str = ""
) -> views.NodeView:
    return views.NodeView(
        name=name,
        labels=MappingProxyType(labels or {}),
        kernel_version=kernel,
        os_image=image,
        architecture="amd64",
    )


def test_nfd_labels_win_over_node_info() -> None:
    n = node(
        "a",
        labels={views.KERNEL_LABEL: "5.14.0-1", views.OS_ID_LABEL: "rhel", views.OS_VERSION_LABEL: "9.4"},
        kernel="ignored",
        image="Ubuntu 22.04 LTS",
    )
    group = kernels.node_group(n)
    assert (group.kernel, group.os.tag) == ("5.14.0-1", "rhel9.4")


def test_node_info_is_the_fallback_without_nfd_labels() -> None:
    group = kernels.node_group(node("a", kernel="5.15.0-105-generic", image="Ubuntu 22.04.4 LTS"))
    assert (group.kernel, group.os.tag, group.arch) == ("5.15.0-105-generic", "ubuntu22.04", "x86_64")


def test_nodes_with_the_same_kernel_and_os_share_a_group_and_a_kernelless_node_has_none() -> None:
    nodes = [
        node("b", kernel="5.15.0-105-generic", image="Ubuntu 22.04 LTS"),
        node("a", kernel="5.15.0-105-generic", image="Ubuntu 22.04 LTS"),
        node("c", kernel="5.15.0-105-generic", image="Debian GNU/Linux 12"),
        node("d"),
    ]
    groups = kernels.group_nodes(nodes)
    assert list(groups) == ["a", "b", "c"]
    assert groups["a"] == groups["b"] != groups["c"]
    assert groups["a"] is groups["b"], "the nodes of one group share its instance"
    assert hash(groups["c"]) == hash(kernels.node_group(nodes[2])) and groups["c"] == kernels.node_group(
        nodes[2]
    )


def test_the_group_selector_uses_os_labels_only_when_every_member_has_them() -> None:
    labelled = {views.KERNEL_LABEL: "k", views.OS_ID_LABEL: "rhel", views.OS_VERSION_LABEL: "9.4"}
    a, b = (
        node("a", labels=labelled),
        node("b", labels={views.KERNEL_LABEL: "k"}, image="Red Hat Enterprise Linux 9.4"),
    )
    group = kernels.node_group(a)
    assert kernels.group_selector(group, [a]) == labelled
    assert kernels.group_selector(group, [a, b]) == {views.KERNEL_LABEL: "k"}
