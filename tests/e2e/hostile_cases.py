"""Bad recipes as data: launched together, checked one by one, fixed together.

A module of ``test_hostile_*.py`` lists its cases (the files a recipe gets over a good
one, the reason and the ``file:line`` its SpecialResource must report), launches them all
in one module fixture so the operator meets them at once (as it would a real mess), then
each test checks its own case, and a last test fixes every recipe and waits until all
converge, without a restart. A directory recipe's fix is noticed by the operator's
periodic recheck (directories are not watched), a ConfigMap's at once.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hostile import GOOD_FILES, Env, short

FIX_WITHIN = 45.0  # a directory recipe is looked at again every 30 s (planner.RECIPE_RECHECK)


@dataclass(frozen=True)
class Case:
    """One bad input: ``files`` over the good recipe (``None`` removes one), what is reported."""

    files: Mapping[str, str | bytes | None]
    reason: str
    where: str  # the message names this place (file:line)
    text: str = ""  # and says this
    source: str = "dir"  # "dir" (a drop-in directory) or "cm" (a ConfigMap)
    spec: Mapping[str, Any] = field(default_factory=dict)
    wrote: tuple[str, ...] = ()  # states allowed to have been written (the good ones)


def recipe_files(case: Case) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = dict(GOOD_FILES)
    for rel, content in case.files.items():
        if content is None:
            files.pop(rel, None)
        else:
            files[rel] = content
    return files


@dataclass
class Launched:
    """What a module launched: case id -> (SpecialResource, recipe)."""

    cases: Mapping[str, Case]
    made: dict[str, tuple[str, str]] = field(default_factory=dict)

    def name(self, case_id: str) -> str:
        return self.made[case_id][0]


def launch(hx: Env, cases: Mapping[str, Case], prefix: str) -> Launched:
    """Write every case's recipe and create its SpecialResource, each with a planted tenant object."""
    out = Launched(cases=cases)
    for case_id, case in cases.items():
        recipe, name = short(prefix), short(prefix)
        files = recipe_files(case)
        if case.source == "cm":
            hx.cm_recipe(recipe, {k: v if isinstance(v, str) else v.decode() for k, v in files.items()})
        else:
            hx.dir_recipe(recipe, files)
        hx.plant(name)
        hx.sr(name, recipe, **dict(case.spec))
        out.made[case_id] = (name, recipe)
    return out


async def check(hx: Env, launched: Launched, case_id: str) -> dict[str, Any]:
    """The case's SpecialResource reports its reason and place, wrote nothing of the bad
    state, and the suite's monitors are content; returns the Degraded condition."""
    case = launched.cases[case_id]
    name = launched.name(case_id)
    cond = await hx.degraded(name, case.reason)
    print(f"{case_id}: {cond['message']}")
    assert case.where in cond["message"], cond["message"]
    assert case.text in cond["message"], cond["message"]
    if case.reason == "ApplyFailed":  # the namespace exists; the refused state is unwritten
        allowed = {w for state in case.wrote for w in hx.written(name, state=state)}
        written = [w for w in hx.written(name) if not w.startswith("node label")]
        assert [w for w in written if w not in allowed] == [], written
    else:
        hx.assert_nothing_written(name)
    await hx.after_case()
    return cond


async def fix_all(hx: Env, launched: Launched) -> None:
    """Every recipe made good again (spec left as it was): every SpecialResource becomes Ready."""
    for case_id, (_, recipe) in launched.made.items():
        case = launched.cases[case_id]
        if case.source == "cm":
            hx.cm_recipe(recipe, GOOD_FILES)
        else:
            shutil.rmtree(hx.operator.recipes_dir / recipe)
            hx.dir_recipe(recipe, GOOD_FILES)
    await hx.ready(*(name for name, _ in launched.made.values()), within=FIX_WITHIN)
    await hx.after_case()


__all__ = ["Case", "Launched", "check", "fix_all", "launch"]
