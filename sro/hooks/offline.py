"""Checking recipes and SpecialResource files without a cluster (``sro lint``).

A recipe is only valid if it renders, so lint renders it, for a representative
inventory: one synthetic node per common OS family (each its own kernel group) that
carries the recipe's selector labels, so kernel-affine and per-node documents are
exercised too. Kinds are judged by the built-in table and the kinds declared with
``--api-versions`` (any other kind must be optional).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sro.errors import RecipeError
from sro.hooks import offline_inputs, pipeline
from sro.model import recipe_policy, selection, views
from sro.model import specialresource as srmodel
from sro.render import kinds, values
from sro.render import problems as problems_
from sro.render import recipe as recipe_

# (name, kernel, os id, os version, osImage): one per OS family a recipe is likely to meet.
REPRESENTATIVE = (
    ("lint-rhel94", "5.14.0-427.13.1.el9_4.x86_64", "rhel", "9.4", "Red Hat Enterprise Linux 9.4 (Plow)"),
    ("lint-ubuntu2204", "5.15.0-105-generic", "ubuntu", "22.04", "Ubuntu 22.04.4 LTS"),
)


def representative_nodes(selector: Mapping[str, str]) -> list[views.NodeView]:
    """Synthetic nodes that ``selector`` selects, one per entry of REPRESENTATIVE."""
    nodes = []
    for name, kernel, os_id, version, image in REPRESENTATIVE:
        labels = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            views.KERNEL_LABEL: kernel,
            views.OS_ID_LABEL: os_id,
            views.OS_VERSION_LABEL: version,
            views.OS_MAJOR_LABEL: version.split(".")[0],
            views.OS_MINOR_LABEL: version.split(".")[1],
            **selector,
        }
        nodes.append(
            views.NodeView(
                name=name,
                labels=MappingProxyType(labels),
                ready=True,
                kernel_version=kernel,
                os_image=image,
                architecture="amd64",
            )
        )
    return nodes


def synthetic_sr(name: str) -> srmodel.SpecialResource:
    """A SpecialResource with every default, for checking a recipe on its own."""
    body: dict[str, Any] = {
        "apiVersion": srmodel.API_VERSION,
        "kind": srmodel.KIND,
        "metadata": {
            "name": name[: srmodel.NAME_MAX].rstrip("-"),
            "uid": "00000000-0000-0000-0000-000000000000",
        },
        "spec": {"recipe": name},
    }
    return srmodel.parse(body)


MAX_RENDERS = 50
"""SpecialResources one recipe is rendered for by one lint: each render may take the
budget's 5 s, and a file of thousands of them would keep lint busy for hours."""


@dataclass(frozen=True, kw_only=True)
class Report:
    errors: tuple[RecipeError, ...]
    warnings: tuple[str, ...]


def check_recipe(
    recipe: recipe_.Recipe,
    *,
    sr: srmodel.SpecialResource | None = None,
    cluster_version: str = "1.36",
    policy: recipe_policy.RecipePolicy = recipe_policy.DEFAULT,
    declared: kinds.Declared = kinds.BUILTIN,
) -> Report:
    """Render ``recipe`` (for ``sr``, or a default one) on representative nodes; every problem."""
    sr = sr or synthetic_sr(recipe.name)
    selector = selection.effective_selector(sr, recipe_default=recipe.node_selector)
    env = pipeline.Environment(
        cluster_version=cluster_version,
        operator=values.OperatorInfo(namespace="sro-system", image="sro:lint", version="lint"),
        proxy=values.ProxySettings(
            http="http://proxy.lint:3128", https="http://proxy.lint:3128", no_proxy=".cluster.local"
        ),
        is_namespaced=declared.is_namespaced,
        is_served=declared.is_served,
        policy=policy,
    )
    _, found = pipeline.collect_desired(sr, recipe, representative_nodes(selector), env=env)
    return Report(errors=tuple(found.errors), warnings=tuple(found.warnings))


def load_and_check(
    name: str,
    files: Mapping[str, str],
    *,
    source: recipe_.Source,
    origin: str,
    srs: Sequence[srmodel.SpecialResource] = (),
    policy: recipe_policy.RecipePolicy = recipe_policy.DEFAULT,
    declared: kinds.Declared = kinds.BUILTIN,
) -> tuple[recipe_.Recipe | None, Report]:
    """Validate a recipe's files, then render it for each of ``srs`` (or a default SR)."""
    found = problems_.Problems()
    recipe = recipe_.collect(name, files, source=source, origin=origin, problems=found)
    if recipe is None:
        return None, Report(errors=tuple(found.errors), warnings=tuple(found.warnings))
    errors: list[RecipeError] = []
    warnings: list[str] = []
    targets: list[srmodel.SpecialResource | None] = [*srs] or [None]
    if len(targets) > MAX_RENDERS:
        warnings.append(
            f"{origin}: rendered for the first {MAX_RENDERS} of its {len(targets)} SpecialResources only"
        )
        targets = targets[:MAX_RENDERS]
    for sr in targets:
        report = check_recipe(recipe, sr=sr, policy=policy, declared=declared)
        errors.extend(e for e in report.errors if str(e) not in {str(x) for x in errors})
        warnings.extend(w for w in report.warnings if w not in warnings)
    return recipe, Report(errors=tuple(errors), warnings=tuple(warnings))


def read_specialresources(path: Path) -> tuple[list[srmodel.SpecialResource], list[RecipeError]]:
    """Every SpecialResource in a YAML file, and a problem per invalid one (with its line)."""
    found = offline_inputs.read(path)
    return [d.sr for d in found.srs], list(found.problems)
