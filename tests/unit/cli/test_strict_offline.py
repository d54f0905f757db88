"""``sro lint`` and ``sro render`` as strict as the operator: values schemas, ConfigMap recipes,
declared kinds, output formats and filters.

Covers: a ``set`` key the recipe's schema does not know and a wrong type, each at its line
in the SpecialResource file; a ConfigMap recipe (linted and rendered by the operator's
code) with a broken template (in a block or a quoted scalar) or a misspelt ``recipe.yaml``
key, at the line of the YAML file; ``--api-versions`` (served
kinds for an offline check, refused when malformed); ``lint --format json|github``;
``render -o json``, ``--state`` and ``--node``. The operator's side of the schema is
tests/e2e/test_bad_input.py.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from sro import cli, cli_lint, errors
from sro.render import kinds

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
SR = """\
apiVersion: sro.dev/v1alpha1
kind: SpecialResource
metadata:
  name: gpu
spec:
  recipe: nvidia-gpu
  set:
    driverVersion: "550.90.07"
    driverImag: nvcr.io/mine
    dcgmExporter:
      port: "9400"
"""
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: hello-recipe
  labels:
    sro.dev/recipe: hello
data:
  recipe.yaml: |
    nodeSelector:
      kubernetes.io/os: linux
    defaults:
      greeting: hi
    states:
      - name: state-config
  values.schema.json: |
    {"type": "object", "additionalProperties": false, "properties": {"greeting": {"type": "string"}}}
  state-config__configmap.yaml: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: greeting
    data:
      text: "{{ set.greeting }}"
"""
HELLO = "apiVersion: sro.dev/v1alpha1\nkind: SpecialResource\nmetadata:\n  name: hello\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _write(tmp_path: Path, name: str, text: str) -> str:
    (tmp_path / name).write_text(text)
    return str(tmp_path / name)


def test_lint_rejects_a_set_key_not_in_the_schema_and_a_wrong_type_at_their_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    path = _write(tmp_path, "sr.yaml", SR)
    code, out, _ = run(capsys, "lint", path)
    assert code == 1
    assert out.splitlines() == [
        f"{path}:11: SpecialResource gpu: spec.set.dcgmExporter.port: '9400' is not of type 'integer'",
        f"{path}:9: SpecialResource gpu: spec.set.driverImag: unknown key: "
        "the recipe's values schema does not allow it",
    ]


def test_a_configmap_recipe_is_linted_and_a_broken_template_is_at_the_file_s_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert run(capsys, "lint", _write(tmp_path, "good.yaml", CONFIGMAP))[0] == 0
    broken = CONFIGMAP + '      other: "{{ set.greeting | nosuchfilter }}"\n'
    path = _write(tmp_path, "cm.yaml", broken)
    code, out, _ = run(capsys, "lint", path)
    assert code == 1
    assert out.strip() == f"{path}:24: template syntax error: No filter named 'nosuchfilter'."


def test_a_configmap_recipe_s_schema_applies_to_the_specialresources_that_use_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    recipe = _write(tmp_path, "cm.yaml", CONFIGMAP)
    sr = _write(tmp_path, "sr.yaml", HELLO + "spec:\n  set:\n    greeting: 7\n")
    code, out, _ = run(capsys, "lint", recipe, sr)
    assert code == 1
    assert out.strip() == f"{sr}:7: SpecialResource hello: spec.set.greeting: 7 is not of type 'string'"


def test_render_takes_a_configmap_recipe_and_prints_one_kubectl_list_with_o_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    recipe = _write(tmp_path, "cm.yaml", CONFIGMAP)
    sr = _write(tmp_path, "sr.yaml", HELLO)
    argv = ["render", "--recipe", recipe, "--sr", sr, "--nodes", "hack/inventory/example.yaml"]
    code, out, _ = run(capsys, *argv, "-o", "json")
    assert code == 0
    listed = json.loads(out)
    assert listed["kind"] == "List"
    assert [(i["kind"], i["metadata"]["name"], i["data"]) for i in listed["items"]] == [
        ("ConfigMap", "greeting", {"text": "hi"})
    ]
    code, out, err = run(
        capsys, *argv[:4], _write(tmp_path, "bad.yaml", HELLO + "spec:\n  set: {x: 1}\n"), *argv[5:]
    )
    assert code == 1
    assert err.startswith(
        f"sro render: {tmp_path}/bad.yaml:6: SpecialResource hello: spec.set.x: unknown key"
    )


def test_render_state_and_node_filters_print_only_what_they_name(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    argv = ["render", "--recipe", "assets/simple-kmod", "--sr", "tests/golden/simple-kmod.sr.yaml"]
    argv += ["--nodes", "hack/inventory/example.yaml", "-o", "json"]
    whole = json.loads(run(capsys, *argv)[1])["items"]
    code, out, _ = run(capsys, *argv, "--state", "state-driver", "--node", "gpu-rhel94-0")
    assert code == 0
    items = json.loads(out)["items"]
    assert 0 < len(items) < len(whole)
    assert all(i["metadata"]["labels"]["sro.dev/state"] == "state-driver" for i in items)
    daemonsets = [i for i in items if i["kind"] == "DaemonSet"]
    assert len(daemonsets) == 1 and "el9-4" in daemonsets[0]["metadata"]["name"]
    code, _, err = run(capsys, *argv, "--state", "state-nope")
    assert code == 2 and "no state 'state-nope' in recipe simple-kmod" in err
    code, _, err = run(capsys, *argv, "--node", "cpu-0")
    assert code == 2 and "node 'cpu-0' is not selected" in err


def test_api_versions_declare_the_kinds_an_offline_check_takes_as_served(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    code, out, _ = run(capsys, "lint", "assets/nvidia-gpu")
    assert code == 0 and out.count("is not served") == 2
    code, out, _ = run(capsys, "lint", "--api-versions", "monitoring.coreos.com/v1", "assets/nvidia-gpu")
    assert (code, out) == (0, "")
    one = ["--api-versions", "monitoring.coreos.com/v1/ServiceMonitor"]
    code, out, _ = run(capsys, "lint", *one, "assets/nvidia-gpu")
    assert out.count("is not served") == 1 and "PrometheusRule" in out
    with pytest.raises(SystemExit) as caught:
        cli.main(["lint", "--api-versions", "monitoring.coreos.com", "assets/nvidia-gpu"])
    assert caught.value.code == 2


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("monitoring.coreos.com/v1", ("monitoring.coreos.com/v1", None)),
        ("monitoring.coreos.com/v1/ServiceMonitor", ("monitoring.coreos.com/v1", "ServiceMonitor")),
        ("v1", ("v1", None)),
        ("v1/Pod", ("v1", "Pod")),
        ("example.com/v1beta2", ("example.com/v1beta2", None)),
    ],
)
def test_api_versions_take_helm_s_forms(text: str, parsed: tuple[str, str | None]) -> None:
    assert kinds.parse_api_version(text) == parsed


@pytest.mark.parametrize("text", ["x", "Example.com/v1", "g.io/v1/lower", "a/b/c/d", "g.io/1"])
def test_a_malformed_api_version_says_why(text: str) -> None:
    with pytest.raises(ValueError, match=repr(text)):
        kinds.parse_api_version(text)


def test_a_declared_kind_unknown_to_the_tables_is_namespaced_and_an_undeclared_one_unknown() -> None:
    declared = kinds.Declared.parse(["example.com/v1", "nfd.k8s-sigs.io/v1alpha1/NodeFeatureRule"])
    assert declared.is_served("example.com/v1", "Widget") and declared.is_namespaced(
        "example.com/v1", "Widget"
    )
    assert declared.is_namespaced("nfd.k8s-sigs.io/v1alpha1", "NodeFeatureRule") is False
    assert not declared.is_served("nfd.k8s-sigs.io/v1alpha1", "NodeFeature")
    assert declared.is_namespaced("apps/v1", "DaemonSet") is True


def test_lint_formats_json_and_github(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    message = "bad, very: bad\n100%"
    found = [errors.TemplateError(message, location=errors.Location(file="a,b.yaml", line=3))]
    warned = ["x.yaml:7: skipped", "plain"]
    cli_lint.write(found, warned, output="json", out=(out := io.StringIO()))
    assert json.loads(out.getvalue()) == {
        "errors": [
            {"file": "a,b.yaml", "line": 3, "message": "bad, very: bad\n100%", "reason": "TemplateError"}
        ],
        "warnings": [
            {"file": "x.yaml", "line": 7, "message": "skipped", "reason": ""},
            {"file": "", "line": 0, "message": "plain", "reason": ""},
        ],
    }
    cli_lint.write(found, warned, output="github", out=(out := io.StringIO()))
    assert out.getvalue().splitlines() == [
        "::warning file=x.yaml,line=7::skipped",
        "::warning::plain",
        "::error file=a%2Cb.yaml,line=3,title=TemplateError::bad, very: bad%0A100%25",
    ]


def test_a_configmap_recipe_s_recipe_yaml_and_a_quoted_template_are_at_the_file_s_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    misspelt = CONFIGMAP.replace("    nodeSelector:\n", "    nodeSelecter:\n")
    path = _write(tmp_path, "cm.yaml", misspelt)
    code, out, _ = run(capsys, "lint", path)
    assert code == 1 and out.startswith(f"{path}:9: unknown key 'nodeSelecter'")
    quoted = CONFIGMAP + '  state-config__other.yaml: "kind: {{ nope( }}"\n'
    path = _write(tmp_path, "quoted.yaml", quoted)
    code, out, _ = run(capsys, "lint", path)
    assert code == 1 and out.startswith(f"{path}:24: template syntax error")
