"""Recipes that ask for more than a recipe may have, or than the cluster will give.

Covers the recipe policy (a Node, a SpecialResource, the ``kube-system`` Namespace, a
ClusterRoleBinding to a foreign subject, an operator-reserved ``sro.dev/`` label, an
object in another namespace): ``RecipeInvalid`` at the object's line, nothing written.
A NoExecute taint with an empty selector: refused by the CRD, and by the operator when
the empty selector is the recipe's. Then what only the cluster can say: a kind the
operator's ServiceAccount may not list (``ApplyFailed`` with the API server's message,
no stuck worker), a kind not served, more states than the status can hold, a misspelt
field (refused at once by strict field validation, never retried for minutes), an
optional object of an unserved kind (one Warning Event per generation), and a recipe
directory without ``recipe.yaml``.
"""

from __future__ import annotations

import json

import pytest
import specialresources as srs
from hostile import GOOD_CONFIGMAP, GOOD_FILES, Env, short
from hostile_cases import Case, Launched, check, fix_all, launch
from hostile_fixture import hostile_env
from support import waiting

pytestmark = pytest.mark.e2e
__all__ = ["hostile_env"]

NODE = "apiVersion: v1\nkind: Node\nmetadata:\n  name: forged\n"
SR_DOC = "apiVersion: sro.dev/v1alpha1\nkind: SpecialResource\nmetadata:\n  name: forged\nspec: {recipe: x}\n"
KUBE_SYSTEM = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kube-system\n"
BINDING = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: hx-escalate
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
  - {kind: ServiceAccount, name: default, namespace: kube-system}
"""
RESERVED = GOOD_CONFIGMAP.replace("  name: greeting\n", "  name: greeting\n  labels:\n    sro.dev/owner: x\n")
ELSEWHERE = GOOD_CONFIGMAP.replace("  name: greeting\n", "  name: elsewhere\n  namespace: kube-system\n")
TWO_STATES = GOOD_FILES["recipe.yaml"] + "  - name: state-more\n"
NETWORK_POLICY = """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: hx-deny
spec: {podSelector: {}, policyTypes: [Ingress]}
"""
WIDGET = "apiVersion: widgets.example.invalid/v1\nkind: Widget\nmetadata:\n  name: w\n"
MISSPELT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hx-app
spec:
  replicas: 0
  selector: {matchLabels: {app: hx-app}}
  template:
    metadata: {labels: {app: hx-app}}
    spec:
      containers:
        - name: app
          image: registry.example/app:1
          imagePullPolicyy: Always
"""
MANY = 65
MANY_STATES = {
    "recipe.yaml": "description: too many\nnodeSelector: {kubernetes.io/os: linux}\nstates:\n"
    + "".join(f"  - {{name: s{i}, after: []}}\n" for i in range(MANY)),
    **{f"s{i}/configmap.yaml": GOOD_CONFIGMAP.replace("greeting", f"c{i}") for i in range(MANY)},
    "state-config/configmap.yaml": None,
}
EMPTY_SELECTOR = GOOD_FILES["recipe.yaml"].replace(
    "nodeSelector:\n  kubernetes.io/os: linux\n", "nodeSelector: {}\n"
)

CASES = {
    "a-node": Case(
        {"state-config/node.yaml": NODE},
        "RecipeInvalid",
        "state-config/node.yaml:2",
        "may not create Node objects",
        source="cm",
    ),
    "a-specialresource": Case(
        {"state-config/sr.yaml": SR_DOC},
        "RecipeInvalid",
        "state-config/sr.yaml:2",
        "may not create SpecialResource objects",
    ),
    "the-kube-system-namespace": Case(
        {"state-config/ns.yaml": KUBE_SYSTEM},
        "RecipeInvalid",
        "state-config/ns.yaml:2",
        "may not create Namespace objects",
    ),
    "a-binding-to-a-foreign-subject": Case(
        {"state-config/crb.yaml": BINDING},
        "RecipeInvalid",
        "state-config/crb.yaml:2",
        "recipe policy",
        source="cm",
    ),
    "a-reserved-label": Case(
        {"state-config/configmap.yaml": RESERVED},
        "RecipeInvalid",
        "state-config/configmap.yaml:2",
        "labels under sro.dev/",
    ),
    "an-object-in-another-namespace": Case(
        {"state-config/configmap.yaml": ELSEWHERE},
        "RecipeInvalid",
        "state-config/configmap.yaml:5",
        "names namespace 'kube-system'",
    ),
    "a-kind-the-operator-may-not-list": Case(
        {"recipe.yaml": TWO_STATES, "state-more/networkpolicy.yaml": NETWORK_POLICY},
        "ApplyFailed",
        "state-more/networkpolicy.yaml:1",
        'cannot list resource "networkpolicies"',
        wrote=("state-config",),
    ),
    "a-kind-not-served": Case(
        {"state-config/widget.yaml": WIDGET}, "RecipeInvalid", "state-config/widget.yaml:2", "not served"
    ),
    "more-states-than-the-status-holds": Case(
        MANY_STATES, "RecipeInvalid", "recipe.yaml:3", f"{MANY} states, more than the 64"
    ),
    "a-misspelt-field": Case(
        {"recipe.yaml": TWO_STATES, "state-more/deployment.yaml": MISSPELT},
        "ApplyFailed",
        "state-more/deployment.yaml:1",
        "imagePullPolicyy: field not declared in schema",
        wrote=("state-config",),
    ),
    "no-recipe-yaml": Case({"recipe.yaml": None}, "RecipeInvalid", "recipe.yaml", "recipe.yaml is missing"),
}


@pytest.fixture(scope="module")
def launched(hx: Env) -> Launched:
    return launch(hx, CASES, "hx-policy")


@pytest.mark.parametrize("case_id", sorted(CASES))
async def test_a_recipe_asking_for_too_much_is_refused_with_the_reason_and_place(
    hx: Env, launched: Launched, case_id: str
) -> None:
    await check(hx, launched, case_id)


async def test_the_crd_refuses_a_noexecute_taint_on_every_node(hx: Env) -> None:
    name = short("hx-evict")
    body = srs.manifest(
        name,
        recipe="hx-canary",
        node_selector={},
        extra_spec={"taints": [{"key": "hx.sro.dev/evict", "effect": "NoExecute"}]},
    )
    made = hx.cluster.kubectl("create", "-f", "-", input=json.dumps(body), check=False)
    assert made.returncode != 0 and "NoExecute taint with an empty nodeSelector" in made.stderr, made.stderr
    assert not hx.exists(name)
    await hx.after_case()


async def test_the_operator_refuses_a_noexecute_taint_when_the_recipes_selector_is_empty(hx: Env) -> None:
    recipe = short("hx-evict")
    hx.cm_recipe(recipe, {**GOOD_FILES, "recipe.yaml": EMPTY_SELECTOR})
    taint = {"key": short("hx.sro.dev/evict"), "effect": "NoExecute"}
    name = hx.sr(short("hx-evict"), recipe, node_selector=None, taints=[taint])
    cond = await hx.degraded(name, "RecipeInvalid")
    assert "a NoExecute taint on every node" in cond["message"], cond
    hx.assert_nothing_written(name)
    tainted = hx.cluster.kubectl("get", "nodes", "-o", "jsonpath={.items[*].spec.taints[*].key}").stdout
    assert taint["key"] not in tainted.split(), "a node was tainted"
    await hx.after_case()
    hx.patch_sr(name, {"spec": {"nodeSelector": hx.selector}})  # the fix: select the accelerator nodes
    await hx.ready(name)


async def test_an_optional_object_of_an_unserved_kind_is_one_warning_event_per_generation(hx: Env) -> None:
    recipe = short("hx-optional")
    optional = WIDGET.replace("  name: w\n", '  name: w\n  annotations:\n    sro.dev/optional: "true"\n')
    hx.cm_recipe(recipe, {**GOOD_FILES, "state-config/widget.yaml": optional})
    name = hx.sr(short("hx-optional"), recipe)
    await hx.ready(name)

    def warnings() -> list[str]:
        found = srs.events(hx.cluster, name)
        return [e.get("note", "") for e in found if e.get("reason") == "RenderWarnings"]

    await waiting.wait_for(lambda: len(warnings()) == 1, timeout=10, message="one RenderWarnings Event")
    assert "skipped (optional)" in warnings()[0] and "state-config/widget.yaml:2" in warnings()[0], warnings()
    hx.cluster.kubectl("annotate", "sr", name, "hx.sro.dev/nudge=1")  # a pass of the same generation
    hx.patch_sr(name, {"spec": {"set": {"touch": "2"}}})
    await waiting.wait_for(
        lambda: hx.status(name).get("observedGeneration") == 2, timeout=10, message="generation 2 reconciled"
    )
    hx.cluster.kubectl("annotate", "sr", name, "hx.sro.dev/nudge=2", "--overwrite")
    await hx.after_case()
    await waiting.wait_for(lambda: len(warnings()) == 2, timeout=10, message="one more for generation 2")
    assert len(warnings()) == 2, warnings()


async def test_every_fixed_recipe_converges_without_a_restart(hx: Env, launched: Launched) -> None:
    await fix_all(hx, launched)
