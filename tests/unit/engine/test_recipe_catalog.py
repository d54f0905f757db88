"""The recipe catalog off the event loop: loaders that read no cache, compiled versions shared
safely between threads, and what the loop's own callers may read without compiling."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sro import errors
from sro.cache import projections
from sro.engine import compute, recipes
from sro.render import sources

pytestmark = pytest.mark.unit

RECIPE = "nodeSelector:\n  acc: 'yes'\nstates:\n  - name: s\n"
DOC = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: x\n"


def _library(root: Path) -> sources.Library:
    (root / "demo" / "s").mkdir(parents=True)
    (root / "demo" / "recipe.yaml").write_text(RECIPE)
    (root / "demo" / "s" / "cm.yaml").write_text(DOC)
    return sources.Library(sources.SearchPath(directories=(root,)))


def _configmap(version: str, selector: str) -> projections.ObjectView:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "cm-demo",
            "namespace": "sro-system",
            "labels": {sources.RECIPE_LABEL: "demo"},
            "resourceVersion": version,
        },
        "data": {"recipe.yaml": RECIPE.replace("'yes'", repr(selector)), "s__cm.yaml": DOC},
    }
    return projections.ObjectView.from_body(body)


async def test_concurrent_loads_off_the_loop_share_one_compiled_version(tmp_path: Path) -> None:
    library = _library(tmp_path)
    assert library.compiled("demo") is None  # nothing compiled yet, and nothing compiled by asking
    loaded = await asyncio.gather(*(compute.load_recipe(lambda: library.get("demo")) for _ in range(8)))
    assert {r.digest for r in loaded} == {loaded[0].digest}
    assert library.compiled("demo") in loaded
    assert library.compiled("missing") is None


async def test_a_configmap_recipe_is_read_on_the_loop_and_compiled_on_a_thread(tmp_path: Path) -> None:
    shown = [_configmap("1", "one")]
    catalog = recipes.Catalog(_library(tmp_path), configmaps=lambda: shown, namespace="sro-system")
    load = catalog.loader("demo")
    shown = [_configmap("2", "two")]  # what the loader compiles was read when it was made
    first = await compute.load_recipe(load)
    assert dict(first.node_selector) == {"acc": "one"}
    assert catalog.compiled("demo") is first  # version 2 not compiled yet: the last one compiled
    second = await compute.load_recipe(catalog.loader("demo"))
    assert dict(second.node_selector) == {"acc": "two"}
    assert catalog.compiled("demo") is second
    assert catalog.get("demo") is second


async def test_a_configmap_version_that_fails_is_compiled_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiles: list[str] = []
    real = sources.configmap_recipe

    def counted(name: str, data: dict[str, str], **kwargs: str) -> object:
        compiles.append(data["recipe.yaml"])
        return real(name, data, **kwargs)

    monkeypatch.setattr(sources, "configmap_recipe", counted)
    broken = _configmap("3", "x")
    broken.body["data"]["recipe.yaml"] = "descriptio: x\nstates: [{name: s}]\n"
    shown = [_configmap("2", "two")]
    catalog = recipes.Catalog(_library(tmp_path), configmaps=lambda: shown, namespace="sro-system")
    good = await compute.load_recipe(catalog.loader("demo"))
    shown = [broken]
    for _ in range(3):
        with pytest.raises(errors.RecipeInvalid, match="unknown key 'descriptio'"):
            await compute.load_recipe(catalog.loader("demo"))
    assert len(compiles) == 2
    assert catalog.compiled("demo") is good  # the newest version that compiled


async def test_a_deleted_configmap_recipe_is_forgotten(tmp_path: Path) -> None:
    shown = [_configmap("1", "one")]
    catalog = recipes.Catalog(_library(tmp_path), configmaps=lambda: shown, namespace="sro-system")
    first = await compute.load_recipe(catalog.loader("demo"))
    assert catalog.compiled("demo") is first
    shown = []
    from_directory = await compute.load_recipe(catalog.loader("demo"))  # the library's, now
    assert from_directory is not first
    shown = [_configmap("1", "one")]  # the same version shown again is compiled again: none was kept
    again = await compute.load_recipe(catalog.loader("demo"))
    assert again is not first and dict(again.node_selector) == {"acc": "one"}
