"""``--recipe-policy``: an administrator's policy file, read alike by lint, render and run.

Covers: the default policy refuses a CRD in a recipe with file:line; a policy file that
allows CRDs lets lint pass; a malformed policy (unknown key, wrong shapes, not YAML,
missing file) is one line naming the file, never a traceback; denyKinds adds to the
defaults; ``run`` carries the file into its settings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sro import cli, errors
from sro.model import recipe_policy
from sro.render import policy_file

pytestmark = pytest.mark.unit

RECIPE = "description: d\nnodeSelector: {}\nstates:\n  - name: state-a\n"
CRD = (
    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n"
    "  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n"
    "  names: {kind: Widget, plural: widgets}\n  versions: [{name: v1, served: true, storage: true}]\n"
)


def recipe(tmp_path: Path) -> Path:
    root = tmp_path / "with-crd"
    (root / "state-a").mkdir(parents=True)
    (root / "recipe.yaml").write_text(RECIPE)
    (root / "state-a" / "crd.yaml").write_text(CRD)
    return root


def test_a_policy_file_that_allows_crds_lets_a_recipe_ship_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = recipe(tmp_path)
    assert cli.main(["lint", str(root)]) == 1
    assert f"{root}/state-a/crd.yaml:2: CustomResourceDefinition/widgets.example.com: a recipe may not" in (
        capsys.readouterr().out
    )
    policy = tmp_path / "policy.yaml"
    policy.write_text("allowKinds:\n  - {group: apiextensions.k8s.io, kind: CustomResourceDefinition}\n")
    assert cli.main(["lint", "--recipe-policy", str(policy), str(root)]) == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("allowKind: []\n", "unknown key(s) in the recipe policy: allowKind"),
        ("allowKinds: {group: x}\n", "allowKinds must be a list"),
        ("allowKinds: [{group: x}]\n", "allowKinds[0] must be a mapping with a kind"),
        ("denyKinds: [{kind: Secret, group: 3}]\n", "denyKinds[0].group must be a string"),
        ("allowForeignSubjects: maybe\n", "allowForeignSubjects must be true or false"),
        ("- a list\n", "a recipe policy must be a mapping"),
        ("allowKinds: [\n", "invalid YAML"),
        ("a: 1\na: 2\n", "duplicate key"),
    ],
)
def test_a_malformed_policy_is_one_line_naming_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(text)
    with pytest.raises(
        errors.RecipeInvalid, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")
    ):
        policy_file.load(policy)
    code = cli.main(["lint", "--recipe-policy", str(policy), str(recipe(tmp_path))])
    captured = capsys.readouterr()
    assert code != 0 and "Traceback" not in captured.err + captured.out
    assert str(policy) in captured.err


def test_a_missing_policy_file_is_an_error_and_none_is_the_default(tmp_path: Path) -> None:
    with pytest.raises(errors.RecipeInvalid, match="cannot read the recipe policy"):
        policy_file.load(tmp_path / "nowhere.yaml")
    assert policy_file.load("") is recipe_policy.DEFAULT
    assert policy_file.load(None) is recipe_policy.DEFAULT


def test_deny_kinds_add_to_the_defaults_and_allow_kinds_take_away(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "denyKinds: [{kind: Secret}]\nallowKinds: [{kind: Namespace}]\nallowForeignSubjects: true\n"
    )
    loaded = policy_file.load(policy)
    assert loaded.denies("", "Secret") and loaded.denies("", "Node")
    assert not loaded.denies("", "Namespace") and loaded.foreign_subjects


def test_run_carries_the_policy_file_into_its_settings(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("{}\n")
    args = cli.build_parser().parse_args(["run", "--recipe-policy", str(tmp_path / "p.yaml")])
    assert cli.run_settings(args).operator.recipe_policy == str(tmp_path / "p.yaml")
