"""YAML that costs more than it says, and `set` values that look like YAML, through the operator.

Covers YAML bombs in drop-in recipes, from a directory and from a ConfigMap, in a state's
template and in ``recipe.yaml``: billion laughs, a merge-key bomb, nesting thousands of
levels deep, an alias that contains itself. Each is ``RecipeInvalid`` at its file and
line, quickly, with the operator's ``/healthz`` and Lease untouched (the suite's monitors).
Then ``spec.set`` values holding quotes, newlines, ``---``, flow brackets, anchors,
aliases, tags and template syntax, pasted into every kind of scalar a template has: the
object keeps the template's structure and each value arrives as the string it was.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hostile import Env, short
from hostile_cases import Case, Launched, check, fix_all, launch
from hostile_fixture import hostile_env

pytestmark = pytest.mark.e2e
__all__ = ["hostile_env"]

LAUGHS = "\n".join(
    f"  {a}: &{a} [" + ", ".join([f"*{b}"] * 9 if b else ['"lol"'] * 9) + "]"
    for a, b in zip("abcdefghi", ["", *"abcdefgh"], strict=True)
)
BILLION_LAUGHS = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n{LAUGHS}\n"
MERGE_BOMB = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: merge\ndata:\n"
    "  a: &a {x0: '1', x1: '1'}\n"
    + "".join(f"  m{i}: &m{i} {{<<: [*{'a' if i == 0 else f'm{i - 1}'}], y{i}: '1'}}\n" for i in range(40))
)
DEEP = "[" * 5000 + "]" * 5000
DEEP_DOCUMENT = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata:\n  x: {DEEP}\n"
RECURSIVE = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: loop\ndata:\n  x: &x [*x]\n"
RECIPE_HEAD = "description: hostile\nnodeSelector:\n  kubernetes.io/os: linux\ndefaults:\n  touch: '0'\n"
RECIPE_TAIL = "states:\n  - name: state-config\n"

BOMBS = {
    "billion-laughs-in-a-template": Case(
        {"state-config/lol.yaml": BILLION_LAUGHS},
        "RecipeInvalid",
        "state-config/lol.yaml:1",
        "once its aliases are expanded",
    ),
    "billion-laughs-in-recipe-yaml-from-a-configmap": Case(
        {"recipe.yaml": RECIPE_HEAD + LAUGHS + "\n" + RECIPE_TAIL},
        "RecipeInvalid",
        "/recipe.yaml:1",
        "once its aliases are expanded",
        source="cm",
    ),
    "merge-key-bomb-in-a-template": Case(
        {"state-config/merge.yaml": MERGE_BOMB},
        "RecipeInvalid",
        "state-config/merge.yaml:1",
        "merge keys (<<) are not supported",
    ),
    "merge-key-bomb-in-recipe-yaml-from-a-configmap": Case(
        {"recipe.yaml": RECIPE_HEAD + MERGE_BOMB.split("\ndata:\n")[1] + RECIPE_TAIL},
        "RecipeInvalid",
        "/recipe.yaml:7",
        "merge keys (<<) are not supported",
        source="cm",
    ),
    "nesting-5000-deep-in-a-template": Case(
        {"state-config/deep.yaml": DEEP_DOCUMENT},
        "RecipeInvalid",
        "state-config/deep.yaml:1",
        "nested deeper than 100 levels",
    ),
    "nesting-5000-deep-in-recipe-yaml-from-a-configmap": Case(
        {"recipe.yaml": RECIPE_HEAD + f"  deep: {DEEP}\n" + RECIPE_TAIL},
        "RecipeInvalid",
        "/recipe.yaml:6",
        "nested deeper than 100 levels",
        source="cm",
    ),
    "an-alias-inside-itself": Case(
        {"state-config/loop.yaml": RECURSIVE}, "RecipeInvalid", "state-config/loop.yaml:1", "contains itself"
    ),
}

PASTED = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: greeting
  annotations: {hx.sro.dev/flow: "{{ set.v }}", hx.sro.dev/flow-plain: {{ set.v }}}
data:
  touch: "{{ set.touch }}"
  plain: {{ set.v }}
  quoted: "{{ set.v }}"
  single: '{{ set.v }}'
  mixed: prefix-{{ set.v }}-suffix
  block: |
    {{ set.v }}
"""
VALUES = {
    "quotes-and-backslashes": 'it\'s "quoted" \\ back\\slash \\"',
    "a-newline-and-a-second-document": 'hi"]\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: stolen}',
    "flow-brackets": "]}, {evil: [1, 2]}, [",
    "anchors-aliases-tags-merge": "&anchor *alias !!python/object:os.system {<<: *anchor}",
    "template-syntax": "{{ 7*7 }} {% for x in range(9**9) %}{% endfor %} {# #}",
    "a-key-and-a-list-item": "x\nevil: true\n  - item\n: -\t# comment",
}


@pytest.fixture(scope="module")
def bombs(hx: Env) -> Launched:
    return launch(hx, BOMBS, "hx-bomb")


@pytest.fixture(scope="module")
def pasted(hx: Env) -> Iterator[dict[str, str]]:
    made = {}
    for case_id, value in VALUES.items():
        recipe, name = short("hx-set"), short("hx-set")
        files = {"recipe.yaml": RECIPE_HEAD + RECIPE_TAIL, "state-config/configmap.yaml": PASTED}
        hx.dir_recipe(recipe, files)
        made[case_id] = hx.sr(name, recipe, set_values={"v": value})
    yield made


@pytest.mark.parametrize("case_id", sorted(BOMBS))
async def test_a_yaml_bomb_is_refused_at_its_file_and_line(hx: Env, bombs: Launched, case_id: str) -> None:
    await check(hx, bombs, case_id)


@pytest.mark.parametrize("case_id", sorted(VALUES))
async def test_a_set_value_pasted_into_a_template_stays_one_string(
    hx: Env, pasted: dict[str, str], case_id: str
) -> None:
    value, name = VALUES[case_id], pasted[case_id]
    await hx.ready(name)
    (made,) = hx.cluster.kubectl_json("get", "configmaps", "-n", name, "-l", f"sro.dev/owner={name}")["items"]
    assert made["metadata"]["name"] == "greeting"
    assert made["data"] == {
        "touch": "0",
        "plain": value,
        "quoted": value,
        "single": value,
        "mixed": f"prefix-{value}-suffix",
        "block": value + "\n",
    }
    annotations = made["metadata"]["annotations"]
    assert annotations["hx.sro.dev/flow"] == value and annotations["hx.sro.dev/flow-plain"] == value
    assert [w for w in hx.written(name) if not w.startswith("node label")] == [f"ConfigMap/{name}/greeting"]
    secrets = hx.cluster.kubectl("get", "secrets", "-n", name, "-o", "name").stdout.split()
    assert not [s for s in secrets if "stolen" in s], secrets
    await hx.after_case()


async def test_every_fixed_recipe_converges_without_a_restart(hx: Env, bombs: Launched) -> None:
    await fix_all(hx, bombs)
