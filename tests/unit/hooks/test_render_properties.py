"""Properties of render_desired over generated clusters (hypothesis).

For any set of nodes (odd names, long names, many kernels and OS releases) the
simple-kmod recipe renders to: valid, bounded, unique object names; one driver
DaemonSet per kernel group selecting exactly that group; one validation Pod per
selected node pinned to it; and the same output whatever the order of the nodes.
"""

from __future__ import annotations

from types import MappingProxyType

import pytest
from conftest import render
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sro.model import names, views
from sro.model import specialresource as srmodel
from sro.render import sources

pytestmark = pytest.mark.unit

RECIPE = sources.Library(sources.default_search_path()).get("simple-kmod")
SR = srmodel.parse(
    {
        "apiVersion": "sro.dev/v1alpha1",
        "kind": "SpecialResource",
        "metadata": {"name": "kmod"},
        "spec": {"recipe": "simple-kmod"},
    }
)

label = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=30).filter(
    lambda s: s[0] != "-" and s[-1] != "-"
)
node_names = st.lists(label, min_size=1, max_size=4).map(".".join).filter(lambda s: len(s) <= 253)
kernel = st.builds(
    lambda a, b, c, rel: f"{a}.{b}.{c}-{rel}",
    st.integers(3, 6),
    st.integers(0, 20),
    st.integers(0, 300),
    label,
)
os_release = st.sampled_from([("rhel", "9.4"), ("rhel", "8.10"), ("ubuntu", "22.04"), ("ubuntu", "24.04")])


@st.composite
def clusters(draw: st.DrawFn) -> list[views.NodeView]:
    count = draw(st.integers(1, 12))
    found = draw(st.lists(node_names, min_size=count, max_size=count, unique=True))
    kernels = draw(st.lists(kernel, min_size=1, max_size=4))
    out = []
    for name in found:
        os_id, version = draw(os_release)
        labels = {
            "kubernetes.io/os": "linux",
            views.KERNEL_LABEL: draw(st.sampled_from(kernels)),
            views.OS_ID_LABEL: os_id,
            views.OS_VERSION_LABEL: version,
        }
        out.append(views.NodeView(name=name, labels=MappingProxyType(labels), architecture="amd64"))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=clusters(), seed=st.randoms(use_true_random=False))
def test_generated_clusters_render_to_valid_unique_placed_objects(
    nodes: list[views.NodeView], seed: object
) -> None:
    result = render(SR, RECIPE, nodes)
    refs = [o.ref for o in result.objects]
    assert len(refs) == len(set(refs))
    daemonsets = [o for o in result.objects if o.kind == "DaemonSet"]
    pods = [o for o in result.objects if o.kind == "Pod"]
    for obj in daemonsets + pods:
        assert names.is_dns_label(obj.body["metadata"]["name"]), obj.body["metadata"]["name"]
    groups = set(result.kernel_groups.values())
    assert len(daemonsets) == len(groups)
    for ds in daemonsets:
        assert ds.kernel_group in groups
        selector = ds.body["spec"]["template"]["spec"]["nodeSelector"]
        assert selector[views.KERNEL_LABEL] == ds.kernel_group.kernel  # type: ignore[union-attr]
    assert sorted(p.body["spec"]["nodeName"] for p in pods) == sorted(n.name for n in nodes)

    shuffled = list(nodes)
    seed.shuffle(shuffled)  # type: ignore[attr-defined]
    assert [o.body for o in render(SR, RECIPE, shuffled).objects] == [o.body for o in result.objects]
