"""A render handed the last one takes its unchanged per-node pods again, and nothing else.

Whatever changed between two renders (a node's kernel, nodes joining or leaving, the
values a template reads), the render that reuses must print exactly what a render from
scratch prints, key order included; the pods it takes again are the last render's own
instances, so the planner compares them by identity.
"""

from __future__ import annotations

import json
import random

import pytest
from conftest import RHEL, UBUNTU, make_node, make_recipe, make_sr, pod, render

from sro.model import desired, views
from sro.render import recipe as recipe_
from sro.render import sources

pytestmark = pytest.mark.unit

KERNELS = (RHEL, UBUNTU, ("5.14.0-503.11.1.el9_5.x86_64", "rhel", "9.5"))
SWAPPED = (  # the same labels, in the order a value picks: equal objects, printed differently
    '{% if set.swap | default(false) %}    b: "2"\n    a: "1"\n{% else %}    a: "1"\n    b: "2"\n{% endif %}'
)
TEMPLATED = make_recipe(
    {
        "s": {
            "p.yaml": pod(annotations='    sro.dev/per-node: "true"\n')
            .replace("image: img", "image: {{ set.image | default('img') }}")
            .replace("  annotations:\n", "  labels:\n" + SWAPPED + "  annotations:\n", 1),
            "k.yaml": pod(
                "kcheck", annotations='    sro.dev/per-node: "true"\n    sro.dev/kernel-affine: "true"\n'
            ),
        }
    }
)


def _printed(state: desired.DesiredState) -> list[str]:
    return [json.dumps(o.body) for o in state.objects]  # key order included: what ``sro render`` prints


def _recipe(name: str) -> recipe_.Recipe:
    return TEMPLATED if name == "templated" else sources.Library(sources.default_search_path()).get(name)


def _values(recipe_name: str, version: str) -> dict[str, object]:
    """Values that change every per-node pod of the recipe (the validator's, for the GPU one)."""
    if recipe_name == "nvidia-gpu":
        return {"validator": {"version": version}}
    return {"image": "v1" if version == "v3" else version, "swap": version == "v3"}


def _nodes(kernels: dict[str, tuple[str, str, str]]) -> list[views.NodeView]:
    return [make_node(name, group) for name, group in sorted(kernels.items())]


@pytest.mark.parametrize("recipe_name", ["nvidia-gpu", "templated"])
@pytest.mark.parametrize("seed", range(6))
def test_a_render_that_reuses_the_last_prints_what_a_render_from_scratch_prints(
    recipe_name: str, seed: int
) -> None:
    rng = random.Random(seed)
    recipe = _recipe(recipe_name)
    long = "n" * 70  # no valid label value: its pods carry no node label
    kernels = {name: rng.choice(KERNELS) for name in ("a", "b", "c", f"{long}-d", "e")}
    version = "v1"
    last = render(make_sr(recipe_name, set=_values(recipe_name, version)), recipe, _nodes(kernels))
    reused = 0
    for _ in range(8):
        what = rng.choice(("kernel", "join", "leave", "values", "nothing"))
        if what == "kernel":
            kernels[rng.choice(sorted(kernels))] = rng.choice(KERNELS)
        elif what == "join":
            kernels[rng.choice(("0", "b0", "z", f"{long}-f"))] = rng.choice(KERNELS)
        elif what == "leave" and len(kernels) > 1:
            del kernels[rng.choice(sorted(kernels))]
        elif what == "values":
            version = rng.choice(("v1", "v2", "v3"))  # v3: only the order of the labels, where it can
        sr = make_sr(recipe_name, set=_values(recipe_name, version))
        again = render(sr, recipe, _nodes(kernels), last=last)
        assert _printed(again) == _printed(render(sr, recipe, _nodes(kernels)))
        kept = {id(o) for o in last.objects}
        reused += sum(1 for o in again.objects if id(o) in kept)
        last = again
    assert reused > 0, "unchanged per-node pods are taken again"


def test_only_the_pods_of_the_node_whose_kernel_changed_are_made_anew() -> None:
    kernels = {"a": RHEL, "b": RHEL, "c": UBUNTU, "d": UBUNTU}
    sr = make_sr("templated")
    last = render(sr, TEMPLATED, _nodes(kernels))
    again = render(sr, TEMPLATED, _nodes({**kernels, "d": RHEL}), last=last)
    firsts: dict[tuple[object, ...], desired.DesiredObject] = {}
    for o in again.objects:  # each template's first pod went through the hooks again
        firsts.setdefault((o.source, o.kernel_group), o)
    before = {id(o) for o in last.objects}
    made = [
        (o.source.file, o.node)
        for o in again.objects
        if id(o) not in before and o is not firsts[(o.source, o.kernel_group)]
    ]
    assert made == [("demo/s/k.yaml", "d")]  # d's pod of the kernel-affine template, in its new group
    assert _printed(again) == _printed(render(sr, TEMPLATED, _nodes({**kernels, "d": RHEL})))


def test_a_changed_template_takes_nothing_again() -> None:
    kernels = {name: RHEL for name in ("a", "b", "c")}
    last = render(make_sr("templated"), TEMPLATED, _nodes(kernels))
    sr = make_sr("templated", set={"image": "other"})
    again = render(sr, TEMPLATED, _nodes(kernels), last=last)
    before = {id(o) for o in last.objects}
    assert not [o for o in again.objects if o.ref.name.startswith("check-") and id(o) in before]
    assert all(
        o.body["spec"]["containers"][0]["image"] == "other"
        for o in again.objects
        if o.ref.name.startswith("check-")
    )
