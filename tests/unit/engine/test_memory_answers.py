"""What sro's node patches returned, as the memory hands it to the next passes
(``Memory.answers``, ``Memory.executed``).

Covers: an answer stays while the node cache is older than it and is forgotten once the
cache shows it or anything later (a settled fleet keeps none), and a node no longer
selected loses its answer; a patch that did not cordon or uncordon keeps what sro's last
patch set of ``spec.unschedulable`` while that patch is still ahead of the cache.
"""

from __future__ import annotations

import pytest

from sro.engine import execute
from sro.engine import memory as memory_
from sro.model import desired, views
from sro.plan import observed

pytestmark = pytest.mark.unit

NOTHING = desired.DesiredState(
    sr_name="gpu",
    namespace="gpu-ops",
    recipe="r",
    states=(),
    objects=(),
    nodes=("n1", "n2"),
    kernel_groups={},
)


def patched(memory: memory_.Memory, **answers: observed.NodeAnswer) -> None:
    memory.executed(execute.Executed(failures=(), node_answers=answers), wanted=NOTHING)


def at(name: str, version: int) -> views.NodeView:
    return views.NodeView(name=name, resource_version=str(version))


def test_an_answer_stays_while_the_cache_is_older_and_is_forgotten_once_it_shows_it() -> None:
    memory = memory_.Memory()
    first = observed.NodeAnswer(version=10, labels={"gpu.sro.dev/a": "ready"})
    patched(memory, n1=first, n2=observed.NodeAnswer(version=11, labels={}), n3=first)
    assert set(memory.node_answers) == {"n1", "n2"}  # n3 is not selected
    kept = memory.answers([at("n1", 9), at("n2", 11)])
    assert dict(kept) == {"n1": first}  # n2's cache shows its patch
    assert kept["n1"] is first  # the very answer: the walk compares them by identity
    assert memory.answers([at("n1", 9), at("n2", 12)]) is kept  # nothing dropped: the same mapping
    assert memory.answers([at("n1", 10), at("n2", 12)]) == {}
    assert memory.answers([at("n1", 10)]) == {}


def test_a_patch_that_leaves_the_cordon_alone_keeps_what_sros_last_patch_set_of_it() -> None:
    memory = memory_.Memory()
    patched(memory, n1=observed.NodeAnswer(version=10, labels={}, unschedulable=True))
    patched(memory, n1=observed.NodeAnswer(version=11, labels={"gpu.sro.dev/upgrade": "draining"}))
    assert memory.node_answers["n1"].unschedulable is True
    assert memory.node_answers["n1"].labels == {"gpu.sro.dev/upgrade": "draining"}
    patched(memory, n1=observed.NodeAnswer(version=12, labels={}, unschedulable=False))
    assert memory.node_answers["n1"].unschedulable is False
    # Once the cache showed the cordon, what it says of it counts: a later patch says nothing.
    memory.answers([at("n1", 12)])
    patched(memory, n1=observed.NodeAnswer(version=14, labels={}))
    assert memory.node_answers["n1"].unschedulable is None
