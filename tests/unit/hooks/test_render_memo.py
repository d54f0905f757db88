"""A render handed the last one takes its rendered documents again where they would render
alike (sro.render.engine.Memo), and renders again whatever may differ.

Exactness against a render from scratch is ``test_render_reuse``'s (every render there is
handed the last); these tests pin down *what* is taken: the documents of unchanged kernel
groups after a kernel change, everything after a status write (status is no render
input), nothing after the SpecialResource's labels or values changed; and that a taken
document still counts against the render's limits.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from conftest import RHEL, UBUNTU, daemonset, make_node, make_recipe, make_sr, render

from sro import errors
from sro.model import desired
from sro.model import specialresource as srmodel
from sro.render import engine, templates

pytestmark = pytest.mark.unit

OTHER = ("5.14.0-503.11.1.el9_5.x86_64", "rhel", "9.5")
RECIPE = make_recipe(
    {
        "driver": {
            "ds.yaml": daemonset(annotations='    sro.dev/kernel-affine: "true"\n').replace(
                "image: img", "image: drv:{{ kernel.full }}-{{ set.tag | default('v1') }}"
            ),
            "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n"
            "  team: \"{{ (sr.metadata.labels | default({})).team | default('none') }}\"\n",
        }
    }
)


def _documents(state: desired.DesiredState) -> dict[engine.Slot, engine.Rendered]:
    assert isinstance(state.documents, engine.Memo)
    return dict(state.documents.documents)


def _taken(before: desired.DesiredState, after: desired.DesiredState) -> set[engine.Slot]:
    old = _documents(before)
    return {slot for slot, r in _documents(after).items() if old.get(slot) is r}


def _with(sr: srmodel.SpecialResource, **metadata: Any) -> srmodel.SpecialResource:
    body = {**sr.body, "metadata": {**sr.body["metadata"], **metadata}}
    return dataclasses.replace(sr, body=body)


def test_a_kernel_change_renders_the_documents_of_the_new_group_alone() -> None:
    sr = make_sr("demo")
    nodes = [make_node("a", RHEL), make_node("b", UBUNTU)]
    last = render(sr, RECIPE, nodes)
    moved = [make_node("a", RHEL), make_node("b", OTHER)]
    again = render(sr, RECIPE, moved, last=last)
    made = set(_documents(again)) - _taken(last, again)
    made_for = [(slot[1].file, slot[2] and slot[2].kernel) for slot in made]
    assert made_for == [("demo/driver/ds.yaml", OTHER[0])]
    assert [o.body for o in again.objects] == [o.body for o in render(sr, RECIPE, moved).objects]


def test_a_status_write_takes_every_document_again_and_a_label_or_value_change_none() -> None:
    sr = _with(make_sr("demo"), labels={"team": "a"}, resourceVersion="1")
    nodes = [make_node("a", RHEL), make_node("b", UBUNTU)]
    last = render(sr, RECIPE, nodes)
    written = _with(sr, resourceVersion="2")  # what a status write changes of the metadata
    written = dataclasses.replace(written, body={**written.body, "status": {"state": "Ready"}})
    assert _taken(last, render(written, RECIPE, nodes, last=last)) == set(_documents(last))
    relabelled = render(_with(sr, labels={"team": "b"}), RECIPE, nodes, last=last)
    assert not _taken(last, relabelled)
    assert {o.body["data"]["team"] for o in relabelled.objects if o.kind == "ConfigMap"} == {"b"}
    retagged = render(make_sr("demo", set={"tag": "v2"}), RECIPE, nodes, last=last)
    assert not _taken(last, retagged)


def test_a_changed_recipe_or_limits_take_nothing_again() -> None:
    sr = make_sr("demo")
    nodes = [make_node("a", RHEL)]
    last = render(sr, RECIPE, nodes)
    same_text = make_recipe({"driver": {f.split("/")[-1]: d.text for f, d in _sources(RECIPE).items()}})
    assert not _taken(last, render(sr, same_text, nodes, last=last))  # another compiled recipe
    assert not _taken(last, render(sr, RECIPE, nodes, last=last, limits=templates.Limits(seconds=4.0)))


def _sources(recipe: Any) -> dict[str, Any]:
    return {d.location.file: d for s in recipe.states for d in s.documents}


def test_documents_taken_again_still_count_against_the_output_limit() -> None:
    sr = make_sr("demo")
    one = [make_node("a", RHEL)]
    three = [make_node("a", RHEL), make_node("b", UBUNTU), make_node("c", OTHER)]
    cost = sum(r.output for r in _documents(render(sr, RECIPE, one)).values())
    per_group = next(r.output for s, r in _documents(render(sr, RECIPE, one)).items() if s[2] is not None)
    # Room for the two groups' documents and the ConfigMap, not for a third group's.
    limits = templates.Limits(output_bytes=cost + per_group + per_group // 2)
    last = render(sr, RECIPE, [*one, make_node("b", UBUNTU)], limits=limits)
    for handed in (None, last):
        with pytest.raises(errors.TemplateError, match="rendered output exceeds"):
            render(sr, RECIPE, three, last=handed, limits=limits)
