"""The recipe policy: what a recipe may create, enforced in the one render that lint,
render and run share.

Covers: every kind denied by default is refused at its ``kind:`` line, and the whole
recipe with it; bindings only to ServiceAccounts of the operand namespace; no ``sro.dev/``
label set by the recipe; an administrator's ``allowed_kinds`` and ``foreign_subjects``;
the built-in recipes pass (the golden renders show them whole).
"""

from __future__ import annotations

import pytest
from conftest import make_node, make_recipe, make_sr, render

from sro.errors import RecipeInvalid
from sro.model import recipe_policy

pytestmark = pytest.mark.unit

DENIED = [
    ("v1", "Node", "metadata: {name: n1}\n"),
    ("sro.dev/v1alpha1", "SpecialResource", "metadata: {name: other}\nspec: {recipe: x}\n"),
    ("v1", "Namespace", "metadata: {name: kube-system}\n"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "metadata: {name: w.example.com}\n"),
    ("apiregistration.k8s.io/v1", "APIService", "metadata: {name: v1.example.com}\n"),
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "metadata: {name: m}\n"),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "metadata: {name: v}\n"),
]


def binding(kind: str, subject: str) -> str:
    return f"""apiVersion: rbac.authorization.k8s.io/v1
kind: {kind}
metadata:
  name: b
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sro-manager}}
subjects:
{subject}"""


@pytest.mark.parametrize(("api_version", "kind", "rest"), DENIED, ids=[d[1] for d in DENIED])
def test_a_kind_denied_by_default_is_refused_at_its_kind_line(api_version: str, kind: str, rest: str) -> None:
    doc = f"# first line\napiVersion: {api_version}\nkind: {kind}\n{rest}"
    recipe = make_recipe(
        {"one": {"x.yaml": doc, "ok.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"}}
    )
    with pytest.raises(RecipeInvalid) as caught:
        render(make_sr(), recipe, [make_node("a")])
    assert str(caught.value).startswith(f"demo/one/x.yaml:3: {kind}/")
    assert f"may not create {kind} objects" in str(caught.value)


@pytest.mark.parametrize(
    ("subject", "allowed"),
    [
        ("  - {kind: ServiceAccount, name: driver, namespace: gpu}\n", True),
        ("  - {kind: ServiceAccount, name: default, namespace: kube-system}\n", False),
        ("  - {kind: Group, name: 'system:authenticated', apiGroup: rbac.authorization.k8s.io}\n", False),
        ("  - {kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}\n", False),
        ("  - not-a-mapping\n", False),
    ],
)
@pytest.mark.parametrize("kind", ["ClusterRoleBinding", "RoleBinding"])
def test_a_binding_may_only_name_service_accounts_of_the_operand_namespace(
    kind: str, subject: str, allowed: bool
) -> None:
    recipe = make_recipe({"one": {"b.yaml": binding(kind, subject)}})
    if allowed:
        assert [o.kind for o in render(make_sr(), recipe, [make_node("a")]).objects] == [kind]
        return
    with pytest.raises(RecipeInvalid, match="may only name ServiceAccounts of namespace gpu"):
        render(make_sr(), recipe, [make_node("a")])
    lenient = recipe_policy.RecipePolicy(foreign_subjects=True)
    assert len(render(make_sr(), recipe, [make_node("a")], policy=lenient).objects) == 1


@pytest.mark.parametrize("label", ["sro.dev/owner", "sro.dev/state", "sro.dev/node", "sro.dev/anything"])
def test_a_recipe_never_sets_the_operators_own_labels(label: str) -> None:
    doc = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels:\n    {label}: forged\n"
    with pytest.raises(RecipeInvalid, match=f"labels under sro.dev/ are the operator's own: {label}"):
        render(make_sr(), make_recipe({"one": {"c.yaml": doc}}), [make_node("a")])


def test_an_administrator_may_allow_a_denied_kind() -> None:
    doc = "apiVersion: v1\nkind: Namespace\nmetadata: {name: extra}\n"
    recipe = make_recipe({"one": {"ns.yaml": doc}})
    with pytest.raises(RecipeInvalid):
        render(make_sr(), recipe, [make_node("a")])
    allow = recipe_policy.RecipePolicy(allowed_kinds=frozenset({("", "Namespace")}))
    assert [o.kind for o in render(make_sr(), recipe, [make_node("a")], policy=allow).objects] == [
        "Namespace"
    ]


def test_a_no_execute_taint_on_every_node_is_refused() -> None:
    taint = {"key": "gpu", "value": "x", "effect": "NoExecute"}
    recipe = make_recipe({"one": {"c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"}})
    with pytest.raises(RecipeInvalid, match="NoExecute taint on every node"):
        render(make_sr(nodeSelector={}, taints=[taint]), recipe, [make_node("a")])
    selected = make_sr(nodeSelector={"gpu": "yes"}, taints=[taint])
    assert render(selected, recipe, [make_node("a", gpu="yes")]).nodes == ("a",)
    no_schedule = make_sr(nodeSelector={}, taints=[{**taint, "effect": "NoSchedule"}])
    assert render(no_schedule, recipe, [make_node("a")]).nodes == ("a",)
