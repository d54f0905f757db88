"""Loading and validating recipes (sro.render.recipe, sro.render.sources).

Covers recipe.yaml's keys, the state list and its ``after`` graph, state directories,
document splitting with file and line, template syntax errors at load, the ConfigMap
form, and the search path (drop-ins override built-ins). Every error is checked for
its exact file:line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sro.errors import RecipeError, RecipeInvalid, RecipeNotFound, TemplateError, ValuesInvalid
from sro.render import problems, sources
from sro.render import recipe as recipe_

pytestmark = pytest.mark.unit

DOC = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"


def load(files: dict[str, str]) -> recipe_.Recipe:
    return recipe_.load("demo", files, source=recipe_.Source.DIRECTORY, origin="demo")


def errors(files: dict[str, str]) -> list[str]:
    found = problems.Problems()
    recipe_.collect("demo", files, source=recipe_.Source.DIRECTORY, origin="demo", problems=found)
    return [str(e) for e in found.errors]


def test_a_valid_recipe_loads_with_after_defaulting_to_the_previous_state() -> None:
    r = load(
        {
            "recipe.yaml": "description: d\nnodeSelector: {a: 'b'}\ndefaults: {x: 1}\n"
            "states:\n  - name: one\n  - name: two\n  - name: three\n    after: [one]\n  - name: four\n",
            "one/a.yaml": DOC,
            "two/a.yaml": DOC,
            "three/a.yaml": DOC,
            "four/a.yaml": DOC,
        }
    )
    assert [(s.name, s.after) for s in r.states] == [
        ("one", ()),
        ("two", ("one",)),
        ("three", ("one",)),
        ("four", ("three",)),
    ]
    assert dict(r.node_selector) == {"a": "b"} and r.defaults["x"] == 1
    assert r.source is recipe_.Source.DIRECTORY and len(r.digest) == 16


def test_an_unknown_recipe_key_is_an_error_at_its_line() -> None:
    found = errors(
        {"recipe.yaml": "description: d\nnodeSelectr: {}\nstates: [{name: one}]\n", "one/a.yaml": DOC}
    )
    assert found == [
        "demo/recipe.yaml:2: unknown key 'nodeSelectr' (allowed: defaults, description, nodeSelector, states)"
    ]


def test_a_duplicate_key_is_an_error_at_the_second_occurrence() -> None:
    found = errors(
        {"recipe.yaml": "states: [{name: one}]\ndescription: a\ndescription: b\n", "one/a.yaml": DOC}
    )
    assert found == ["demo/recipe.yaml:3: invalid YAML: duplicate key 'description' (first at line 2)"]


def test_a_yaml_syntax_error_in_recipe_yaml_names_its_line() -> None:
    found = errors({"recipe.yaml": "states:\n  - name: one\n  bad: [\n", "one/a.yaml": DOC})
    assert len(found) == 1 and found[0].startswith("demo/recipe.yaml:3: invalid YAML")


@pytest.mark.parametrize(
    ("states", "message"),
    [
        ("  - name: Bad_Name\n", "demo/recipe.yaml:2: state name 'Bad_Name' must be a DNS label"),
        ("  - name: complete\n", "demo/recipe.yaml:2: state name 'complete' is reserved"),
        ("  - name: on\n", "demo/recipe.yaml:2: state name True must be a string (quote it)"),
        ("  - name: one\n  - name: one\n", "demo/recipe.yaml:3: state 'one' is listed twice"),
        (
            "  - name: one\n    after: [nope]\n",
            "demo/recipe.yaml:2: state 'one' comes after unknown state 'nope'",
        ),
        ("  - name: one\n    after: [one]\n", "demo/recipe.yaml:2: state 'one' cannot come after itself"),
        ("  - name: one\n    befor: []\n", "demo/recipe.yaml:2: unknown state key 'befor'"),
        ("  - name: " + "a" * 41 + "\n", "at most 40 characters"),
    ],
)
def test_state_list_errors_name_the_line_of_the_state(states: str, message: str) -> None:
    files = {"recipe.yaml": "states:\n" + states, "one/a.yaml": DOC, "complete/a.yaml": DOC}
    assert any(message in e for e in errors(files)), errors(files)


def test_a_cycle_in_after_is_reported_with_its_path() -> None:
    files = {
        "recipe.yaml": "states:\n  - name: a\n    after: [c]\n  - name: b\n  - name: c\n",
        "a/x.yaml": DOC,
        "b/x.yaml": DOC,
        "c/x.yaml": DOC,
    }
    assert errors(files) == ["demo/recipe.yaml:2: states form a cycle: a -> c -> b -> a"]


def test_a_state_without_a_directory_or_without_yaml_files_is_an_error() -> None:
    files = {"recipe.yaml": "states:\n  - name: one\n  - name: two\n", "two/README": "x", "two/": ""}
    assert errors(files) == [
        "demo/recipe.yaml:2: state 'one' has no directory (expected demo/one/*.yaml)",
        "demo/recipe.yaml:3: state 'two' has no .yaml files (expected demo/two/*.yaml)",
    ]


def test_a_directory_that_is_not_a_state_is_a_warning() -> None:
    r = load({"recipe.yaml": "states: [{name: one}]\n", "one/a.yaml": DOC, "docs/x.yaml": DOC})
    assert r.warnings == ("demo/docs: directory is not a state listed in recipe.yaml; ignored",)


def test_files_split_into_documents_on_exact_separator_lines_with_their_first_line() -> None:
    text = "# c\n---\na: 1\n--- # not a separator\nb: 2\n---\n\n---\nc: 3\n"
    docs = recipe_.split_documents(text, file="f.yaml")
    assert [(d.location.line, d.index) for d in docs] == [(1, 1), (3, 2), (9, 3)]
    assert docs[1].text == "a: 1\n--- # not a separator\nb: 2\n"


def test_kernel_affine_documents_are_recognised_by_the_literal_annotation() -> None:
    affine = 'metadata:\n  annotations:\n    sro.dev/kernel-affine: "true"\n'
    legacy = "metadata:\n  annotations:\n    specialresource.openshift.io/kernel-affine: 'true'\n"
    templated = 'metadata:\n  annotations:\n    sro.dev/kernel-affine: "{{ x }}"\n'
    r = load(
        {"recipe.yaml": "states: [{name: one}]\n", "one/a.yaml": f"{affine}---\n{legacy}---\n{templated}"}
    )
    assert [d.kernel_affine for d in r.states[0].documents] == [True, True, False]


def test_a_template_syntax_error_is_found_at_load_with_its_file_line() -> None:
    files = {"recipe.yaml": "states: [{name: one}]\n", "one/a.yaml": DOC + "---\nx: 1\ny: {{ oops( }}\n"}
    with pytest.raises(TemplateError) as caught:
        load(files)
    assert str(caught.value).startswith("demo/one/a.yaml:7: template syntax error")


def test_configmap_keys_map_to_state_files() -> None:
    files = recipe_.files_from_configmap(
        {"recipe.yaml": "states: [{name: one}]\n", "one__a.yaml": DOC}, origin="configmap/sro/demo"
    )
    r = recipe_.load("demo", files, source=recipe_.Source.CONFIGMAP, origin="configmap/sro/demo")
    assert r.states[0].documents[0].location.file == "configmap/sro/demo/one/a.yaml"
    with pytest.raises(RecipeInvalid, match=r"neither recipe\.yaml, values\.schema\.json nor"):
        recipe_.files_from_configmap({"stray.yaml": ""}, origin="cm")


def test_the_digest_changes_with_any_file() -> None:
    files = {"recipe.yaml": "states: [{name: one}]\n", "one/a.yaml": DOC}
    assert load(files).digest != load({**files, "one/a.yaml": DOC + "data: {}\n"}).digest


def write(root: Path, name: str, description: str) -> None:
    (root / name / "one").mkdir(parents=True)
    (root / name / "recipe.yaml").write_text(f"description: {description}\nstates: [{{name: one}}]\n")
    (root / name / "one" / "a.yaml").write_text(DOC)


def test_a_drop_in_directory_overrides_the_built_in_recipe_of_the_same_name(tmp_path: Path) -> None:
    builtin, dropin = tmp_path / "builtin", tmp_path / "dropin"
    write(builtin, "gpu", "built in")
    write(builtin, "nic", "built in")
    write(dropin, "gpu", "drop in")
    library = sources.Library(sources.SearchPath(directories=(dropin,), builtin=builtin))
    gpu, nic = library.get("gpu"), library.get("nic")
    assert (gpu.description, gpu.source) == ("drop in", recipe_.Source.DIRECTORY)
    assert (nic.description, nic.source) == ("built in", recipe_.Source.BUILT_IN)
    assert library.get("gpu") is gpu  # compiled once per version
    assert library.search.names() == ["gpu", "nic"]


def test_a_missing_recipe_or_a_path_is_recipe_not_found(tmp_path: Path) -> None:
    search = sources.SearchPath(builtin=tmp_path)
    with pytest.raises(RecipeNotFound, match="no recipe named 'gpu'"):
        search.locate("gpu")
    with pytest.raises(RecipeNotFound, match="a name, never a path"):
        search.locate("../etc")


def test_a_drop_in_directory_without_recipe_yaml_says_so_and_hides_no_built_in(tmp_path: Path) -> None:
    builtin, dropin = tmp_path / "builtin", tmp_path / "dropin"
    write(builtin, "gpu", "built in")
    (dropin / "gpu" / "one").mkdir(parents=True)
    library = sources.Library(sources.SearchPath(directories=(dropin,), builtin=builtin))
    with pytest.raises(RecipeInvalid, match=r"dropin/gpu/recipe.yaml: recipe.yaml is missing"):
        library.get("gpu")


def test_a_changed_drop_in_is_reloaded_and_a_broken_one_raises(tmp_path: Path) -> None:
    write(tmp_path, "gpu", "first")
    library = sources.Library(sources.SearchPath(directories=(tmp_path,)))
    assert library.get("gpu").description == "first"
    (tmp_path / "gpu" / "recipe.yaml").write_text("description: second\nstates: [{name: one}]\n")
    assert library.get("gpu").description == "second"
    (tmp_path / "gpu" / "recipe.yaml").write_text("descriptio: third\nstates: [{name: one}]\n")
    with pytest.raises(RecipeError, match="unknown key 'descriptio'"):
        library.get("gpu")


def test_the_built_in_recipes_load() -> None:
    search = sources.default_search_path()
    assert {"nvidia-gpu", "simple-kmod"} <= set(search.names())
    gpu = sources.Library(search).get("nvidia-gpu")
    assert gpu.source is recipe_.Source.BUILT_IN
    assert [s.name for s in gpu.states][-2:] == ["state-grafana", "state-driver-build"]


def test_a_configmap_recipe_reports_its_source_and_names_its_keys_in_errors() -> None:
    data = {"recipe.yaml": "states: [{name: one}]\n", "one__a.yaml": DOC}
    r = sources.configmap_recipe("gpu", data, namespace="sro-system", configmap="gpu-recipe")
    assert (r.name, r.source, r.origin) == (
        "gpu",
        recipe_.Source.CONFIGMAP,
        "configmap/sro-system/gpu-recipe",
    )
    broken = {**data, "one__a.yaml": "x: {{ nope( }}\n"}
    with pytest.raises(TemplateError) as caught:
        sources.configmap_recipe("gpu", broken, namespace="sro-system", configmap="gpu-recipe")
    assert str(caught.value).startswith("configmap/sro-system/gpu-recipe/one/a.yaml:1: template syntax error")


def test_a_version_that_fails_is_refused_from_memory_until_its_files_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiles: list[str] = []
    real = recipe_.load

    def counted(name: str, files: dict[str, str], **kwargs: object) -> recipe_.Recipe:
        compiles.append(files["recipe.yaml"])
        return real(name, files, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(recipe_, "load", counted)
    write(tmp_path, "gpu", "first")
    library = sources.Library(sources.SearchPath(directories=(tmp_path,)))
    good = library.get("gpu")
    (tmp_path / "gpu" / "recipe.yaml").write_text("descriptio: broken\nstates: [{name: one}]\n")
    raised = []
    for _ in range(3):
        with pytest.raises(RecipeInvalid, match="unknown key 'descriptio'") as caught:
            library.get("gpu")
        raised.append(caught.value)
    assert len(compiles) == 2  # the good version and the broken one, each once
    assert len({id(e) for e in raised}) == 3  # a fresh exception each time, with its location
    assert {str(e) for e in raised} == {str(raised[0])} and raised[0].location is not None
    assert library.compiled("gpu") is good  # the newest version that compiled
    (tmp_path / "gpu" / "recipe.yaml").write_text("description: fixed\nstates: [{name: one}]\n")
    assert library.get("gpu").description == "fixed" and len(compiles) == 3


def test_compiled_keeps_one_outcome_per_source_and_the_newest_that_compiled() -> None:
    memo = sources.Compiled()
    recipe = load({"recipe.yaml": "states: [{name: one}]\n", "one/a.yaml": DOC})
    calls: list[str] = []

    def refuse() -> recipe_.Recipe:
        calls.append("refuse")
        raise ValuesInvalid("too big", sr="demo", path=("a", 1))

    assert memo.get("a", "1", lambda: recipe) is recipe and memo.newest("a") is recipe
    for _ in range(2):
        with pytest.raises(ValuesInvalid) as caught:
            memo.get("a", "2", refuse)
        assert (caught.value.sr, caught.value.path, str(caught.value)) == ("demo", ("a", 1), "too big")
    assert calls == ["refuse"] and memo.newest("a") is recipe and memo.newest("b") is None
    again = memo.get("a", "1", lambda: calls.append("again") or recipe)  # another version: compiled
    assert again is recipe and calls == ["refuse", "again"]
    with pytest.raises(ZeroDivisionError):  # only recipe errors are outcomes; others propagate
        memo.get("a", "3", lambda: 1 // 0)  # type: ignore[arg-type, return-value]
    assert memo.get("a", "1", refuse) is recipe  # and leave the last outcome as it was


def test_compiled_forgets_the_sources_it_is_not_told_to_retain() -> None:
    memo = sources.Compiled()
    recipe = load({"recipe.yaml": "states: [{name: one}]\n", "one/a.yaml": DOC})
    for source in ("kept", "gone"):
        memo.get(source, "1", lambda: recipe)
    memo.retain({"kept"})
    assert memo.newest("kept") is recipe and memo.newest("gone") is None
    calls: list[str] = []
    memo.get("gone", "1", lambda: calls.append("again") or recipe)  # compiled anew: nothing was kept
    memo.get("kept", "1", lambda: calls.append("kept") or recipe)  # kept: not compiled again
    assert calls == ["again"]
