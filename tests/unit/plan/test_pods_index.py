"""A pass's pods by node (``plan.pods_index``).

Covers: ``ByNode`` reads like the dict of sorted tuples it stands for, with ``get`` and
indexing alike (the default for a node without pods, ``KeyError`` from indexing it), and
hands the same tuple each time a node is asked for.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sro.model import views
from sro.plan import pods_index

pytestmark = pytest.mark.unit

NODES = st.sampled_from(["", "n1", "n2", "n3"])


@given(st.dictionaries(st.tuples(st.sampled_from(["a", "b"]), st.text(min_size=1, max_size=4)), NODES), NODES)
def test_by_node_reads_like_the_dict_of_sorted_tuples_it_stands_for(
    placed: dict[pods_index.Key, str], asked: str
) -> None:
    pods = {key: views.PodView(namespace=key[0], name=key[1], node=node) for key, node in placed.items()}
    index = pods_index.ByNode(pods_index.by_node(pods))
    expected = {
        node: tuple(pods[key] for key in sorted(k for k, n in placed.items() if n == node))
        for node in set(placed.values())
    }
    assert dict(index) == expected
    assert index.get(asked, ()) == expected.get(asked, ())
    assert index.get(asked) == expected.get(asked)
    if asked in expected:
        assert index.get(asked) is index[asked]  # made once
    else:
        with pytest.raises(KeyError):
            index[asked]
