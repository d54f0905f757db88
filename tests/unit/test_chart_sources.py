"""The chart's copies of the kustomize tree's files, its version and its values schema (files only).

The chart cannot read files outside its directory, so it carries copies of the CRD, the
alerts and the dashboard of ``manifests/``; these tests fail when a copy drifts and say
which ``cp`` repairs it. One version runs through pyproject, the package, the chart and the
kustomize image (hack/release rewrites them together). ``values.yaml`` satisfies
``values.schema.json``, which refuses unknown keys and wrong types. What the chart renders
is compared with the kustomize output in test_chart_render.py.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

import sro

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "sro"
MANIFESTS = REPO / "manifests"

COPIES = [
    (MANIFESTS / "crd" / "sro.dev_specialresources.yaml", CHART / "crds" / "sro.dev_specialresources.yaml"),
    (MANIFESTS / "monitoring" / "prometheus_rule.yaml", CHART / "files" / "prometheus_rule.yaml"),
    (MANIFESTS / "monitoring" / "dashboards" / "sro.json", CHART / "files" / "dashboards" / "sro.json"),
]


@pytest.mark.parametrize(("source", "copy"), COPIES, ids=lambda p: str(p.relative_to(REPO)))
def test_the_chart_carries_the_kustomize_trees_file_unchanged(source: Path, copy: Path) -> None:
    assert copy.read_bytes() == source.read_bytes(), (
        f"{copy.relative_to(REPO)} differs from {source.relative_to(REPO)}: "
        f"cp {source.relative_to(REPO)} {copy.relative_to(REPO)}"
    )


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _kustomize_image() -> dict[str, str]:
    (entry,) = [i for i in _yaml(MANIFESTS / "kustomization.yaml")["images"] if i["name"] == "sro"]
    return {k: str(v) for k, v in entry.items()}


def test_one_version_names_the_package_the_chart_and_the_kustomize_image() -> None:
    with (REPO / "pyproject.toml").open("rb") as f:
        package = tomllib.load(f)["project"]["version"]
    chart = _yaml(CHART / "Chart.yaml")
    image = _kustomize_image()
    assert sro.__version__ == package
    assert (chart["version"], chart["appVersion"], image["newTag"]) == (package, package, package)


def test_the_chart_and_the_kustomize_tree_name_the_same_real_image() -> None:
    values = _yaml(CHART / "values.yaml")["image"]
    image = _kustomize_image()
    assert image["newName"] == values["repository"]
    assert "/" in values["repository"] and "." in values["repository"].split("/")[0], (
        "the image must name its registry, or nodes pull it from nowhere"
    )
    assert values.get("digest", "") == image.get("digest", "")
    assert values["tag"] in ("", image["newTag"])


def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((CHART / "values.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_default_and_the_full_values_satisfy_the_schema() -> None:
    validator = _validator()
    for path in (CHART / "values.yaml", REPO / "tests" / "support" / "chart-values-full.yaml"):
        errors = [e.message for e in validator.iter_errors(_yaml(path))]
        assert errors == [], f"{path.name}: {errors}"


def test_the_full_values_file_sets_every_value_the_chart_has() -> None:
    def paths(value: Any, prefix: str = "") -> set[str]:
        """Every key path, maps' own paths included (an empty map in the defaults is one path)."""
        if not isinstance(value, dict):
            return set()
        return {p for key, v in value.items() for p in {f"{prefix}{key}", *paths(v, f"{prefix}{key}.")}}

    defaults = paths(_yaml(CHART / "values.yaml"))
    full = paths(_yaml(REPO / "tests" / "support" / "chart-values-full.yaml"))
    assert defaults - full == set()


@pytest.mark.parametrize(
    ("change", "word"),
    [
        ({"replicas": 2}, "replicas"),
        ({"image": {"repository": "r", "tagg": "1"}}, "tagg"),
        ({"logFormat": "JSON"}, "JSON"),
        ({"workers": 0}, "0"),
        ({"image": {"repository": "r", "digest": "latest"}}, "latest"),
        ({"metrics": {"port": "8080"}}, "8080"),
        ({"recipes": {"acme": {"state/driver.yaml": "x", "recipe.yaml": "y"}}}, "state/driver.yaml"),
        ({"monitoring": {"serviceMonitor": {"enabled": "yes"}}}, "yes"),
    ],
)
def test_the_schema_refuses_unknown_keys_and_wrong_types(change: dict[str, Any], word: str) -> None:
    values = _yaml(CHART / "values.yaml")
    values.update(change)
    messages = [e.message for e in _validator().iter_errors(values)]
    assert any(word in m for m in messages), messages
