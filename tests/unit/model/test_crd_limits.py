"""The CRD's bounds that sro relies on are the ones in sro.model.crd_limits, and are enforced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sro.errors import RecipeInvalid
from sro.model import crd_limits, desired
from sro.render import problems as problems_
from sro.render import recipe as recipe_
from sro.render import recipe_yaml
from sro.status import conditions, rows

pytestmark = pytest.mark.unit

CRD = Path(__file__).resolve().parents[3] / "manifests" / "crd" / "sro.dev_specialresources.yaml"


def _schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    (version,) = crd["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]
    return schema


def _bound(path: str) -> Any:
    *fields, bound = path.split(".")
    node: dict[str, Any] = {"properties": _schema()}
    for name in fields:
        node = node["items"] if name == "items" else node["properties"][name]
    return node[bound]


@pytest.mark.parametrize("path", sorted(crd_limits.PATHS))
def test_each_limit_is_the_crds(path: str) -> None:
    assert _bound(path) == crd_limits.PATHS[path]


def test_every_status_bound_of_the_crd_is_known_or_not_written_by_recipe_input() -> None:
    found: set[str] = set()

    def walk(node: dict[str, Any], at: str) -> None:
        for bound in ("maxItems", "maxLength"):
            if bound in node:
                found.add(f"{at}.{bound}")
        for name, child in (node.get("properties") or {}).items():
            walk(child, f"{at}.{name}")
        if "items" in node:
            walk(node["items"], f"{at}.items")

    walk(_schema()["status"], "status")
    # The condition's type and reason, phase and ready are sro's own short words.
    own = {
        "status.conditions.maxItems",
        "status.conditions.items.type.maxLength",
        "status.conditions.items.reason.maxLength",
        "status.phase.maxLength",
        "status.ready.maxLength",
        "status.states.items.failingNodes.items.node.maxLength",  # a node name: at most 253 anyway
    }
    assert found - own <= set(crd_limits.PATHS)


def test_the_loaders_and_status_bounds_fit_the_crd() -> None:
    assert recipe_yaml.STATE_NAME_MAX <= crd_limits.STATE_NAME_MAX
    assert recipe_yaml.STATES_MAX == crd_limits.STATES_MAX
    assert rows.FAILING_NODES_MAX == crd_limits.FAILING_NODES_MAX
    assert conditions.MESSAGE_MAX == crd_limits.CONDITION_MESSAGE_MAX


def _recipe_with_states(count: int) -> dict[str, str]:
    files = {"recipe.yaml": "states:\n" + "".join(f"  - name: s{i}\n" for i in range(count))}
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n  namespace: x\n"
    files.update({f"s{i}/cm.yaml": cm.format(i=i) for i in range(count)})
    return files


def test_a_recipe_of_more_states_than_status_rows_is_invalid_at_its_states_line() -> None:
    files = _recipe_with_states(crd_limits.STATES_MAX + 1)
    found = problems_.Problems()
    assert (
        recipe_.collect("many", files, source=recipe_.Source.DIRECTORY, origin="many", problems=found) is None
    )
    (error,) = found.errors
    assert isinstance(error, RecipeInvalid)
    assert str(error) == (
        f"many/recipe.yaml:1: {crd_limits.STATES_MAX + 1} states, more than the {crd_limits.STATES_MAX} "
        "a SpecialResource's status can show (status.states maxItems in the CRD)"
    )
    recipe = recipe_.load(
        "enough",
        _recipe_with_states(crd_limits.STATES_MAX),
        source=recipe_.Source.DIRECTORY,
        origin="enough",
    )
    assert len(recipe.states) == crd_limits.STATES_MAX


def test_kernel_rows_stay_within_the_crds_bounds() -> None:
    long_kernel = "6." + "9" * 400
    groups = {
        f"n{i}": desired.KernelGroup(
            kernel=f"{long_kernel}-{i:05d}", os=desired.OsRelease(id="x" * 100, version_id="1")
        )
        for i in range(crd_limits.KERNELS_MAX + 5)
    }
    wanted = desired.DesiredState(
        sr_name="a",
        namespace="a",
        recipe="r",
        states=(),
        objects=(),
        nodes=tuple(sorted(groups)),
        kernel_groups=groups,
    )
    kernels = rows.kernel_rows(wanted)
    assert len(kernels) == crd_limits.KERNELS_MAX
    assert all(
        len(r["kernel"]) <= crd_limits.KERNEL_MAX and len(r["os"]) <= crd_limits.OS_MAX for r in kernels
    )
