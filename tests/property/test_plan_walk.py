"""Properties of the planner over random state graphs and random cluster states.

For random DAGs of states (each with a DaemonSet, a per-node pod or nothing), random
readiness of their pods on random nodes, and random stale labels on the nodes:

* a state is never open on a node unless every ``after`` state is complete there;
* after the plan's label changes, a node's labels are exactly its complete states (and
  ``complete`` exactly when all are);
* nothing of a state that is not open anywhere (and not yet in the cluster) is applied,
  and a per-node pod is applied only where its state is open;
* planning is deterministic: the same inputs give the same planner.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sro.errors import Location
from sro.model import desired, progress, views
from sro.plan import lifecycle, live_records, observed, planner

pytestmark = pytest.mark.unit

SR, NS = "acc", "acc-ns"
NOW = datetime(2026, 11, 22, tzinfo=UTC)
K = desired.KernelGroup(kernel="6.1.0-1", os=desired.OsRelease(id="debian", version_id="12"))


@st.composite
def worlds(draw: st.DrawFn) -> tuple[desired.DesiredState, observed.Observed]:
    count = draw(st.integers(min_value=1, max_value=6))
    names = [f"s{i}" for i in range(count)]
    specs = tuple(
        desired.StateSpec(name=name, after=tuple(draw(st.sets(st.sampled_from(names[:i]))) if i else ()))
        for i, name in enumerate(names)
    )
    nodes = [f"n{i}" for i in range(draw(st.integers(min_value=1, max_value=4)))]
    kinds = {name: draw(st.sampled_from(["DaemonSet", "Pod", None])) for name in names}
    objects: list[desired.DesiredObject] = []
    for name, kind in kinds.items():
        source = Location(file=f"{name}/x.yaml")
        if kind == "DaemonSet":
            body = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": NS}}
            objects.append(desired.DesiredObject(body=body, state=name, source=source))
        elif kind == "Pod":
            for n in nodes:
                body = {
                    "apiVersion": "v1",
                    "kind": kind,
                    "metadata": {"name": f"{name}-{n}", "namespace": NS},
                }
                objects.append(desired.DesiredObject(body=body, state=name, source=source, node=n))
    wanted = desired.DesiredState(
        sr_name=SR,
        namespace=NS,
        recipe="r",
        states=specs,
        objects=tuple(objects),
        nodes=tuple(nodes),
        kernel_groups=dict.fromkeys(nodes, K),
    )
    live: dict[desired.ObjectRef, live_records.LiveObject] = {}
    pods: list[views.PodView] = []
    for o in objects:
        if not draw(st.booleans()):
            continue
        live[o.ref] = live_records.LiveObject(
            ref=o.ref, uid=f"u-{o.ref.name}", generation=1, template_generation=1
        )
        if o.kind == "Pod":
            phase = draw(st.sampled_from(["Succeeded", "Running", "Failed"]))
            pods.append(
                views.PodView(
                    namespace=NS, name=o.ref.name, uid=f"p-{o.ref.name}", node=o.node or "", phase=phase
                )
            )
            continue
        for n in nodes:
            if draw(st.booleans()):
                pods.append(
                    views.PodView(
                        namespace=NS,
                        name=f"{o.ref.name}-{n}",
                        uid=f"p-{o.ref.name}-{n}",
                        node=n,
                        phase="Running",
                        ready=draw(st.booleans()),
                        labels={"pod-template-generation": "1"},
                        owner_kind="DaemonSet",
                        owner_name=o.ref.name,
                        owner_uid=f"u-{o.ref.name}",
                    )
                )
    stale = st.sets(st.sampled_from([*names, "complete"]))
    node_views = {
        n: views.NodeView(name=n, labels={lifecycle.label_prefix(SR) + s: "ready" for s in draw(stale)})
        for n in nodes
    }
    return wanted, observed.Observed(generation=1, nodes=node_views, objects=live, pods=tuple(pods))


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_a_state_is_only_open_where_its_after_states_are_complete(world: tuple) -> None:
    wanted, seen = world
    result = planner.plan(wanted, seen, now=NOW)
    assert result.walk is not None
    for node, phases in result.walk.nodes.items():
        for spec in wanted.states:
            if phases[spec.name].open:
                assert all(phases[a].phase is progress.Phase.COMPLETE for a in spec.after), (node, spec)


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_labels_after_the_plan_are_exactly_the_complete_states(world: tuple) -> None:
    wanted, seen = world
    result = planner.plan(wanted, seen, now=NOW)
    assert result.walk is not None
    changes = {c.node: c.labels for c in result.node_labels}
    for name, view in seen.nodes.items():
        merged = {k: v for k, v in {**view.labels, **changes.get(name, {})}.items() if v is not None}
        complete = {s for s, ns in result.walk.nodes[name].items() if ns.phase is progress.Phase.COMPLETE}
        expected = {lifecycle.state_label(SR, s): "ready" for s in complete}
        if len(complete) == len(wanted.states):
            expected[lifecycle.complete_label(SR)] = "true"
        assert merged == expected


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_nothing_of_an_unopened_state_is_applied(world: tuple) -> None:
    wanted, seen = world
    result = planner.plan(wanted, seen, now=NOW)
    assert result.walk is not None
    for o in result.apply:
        if o.node is not None:
            assert result.walk.nodes[o.node][o.state].open
        else:
            started = any(x.ref in seen.objects for x in wanted.objects_of(o.state))
            assert result.walk.open_anywhere(o.state) or started
    assert planner.plan(wanted, seen, now=NOW) == result
