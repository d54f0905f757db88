"""Templates that try to outgrow the render's bounds, and a recipe file that is not text.

Covers attempts to allocate or loop past the render budget from a template (padding,
``indent``, repetition, ``format``, ``join``, big integers, doubling lists and strings, a
billion-long range, nested loops, ``lipsum``):
each is a ``TemplateError`` at the template's file and line, found before the allocation,
while ``/healthz`` and the Lease stay on time. And a drop-in file that is not UTF-8,
which breaks only its own SpecialResource: the others, whose dependency and conflict
checks load every recipe in use, keep reconciling spec changes and node changes.
"""

from __future__ import annotations

import pytest
import specialresources as srs
from hostile import GOOD_CONFIGMAP, GOOD_FILES, UBUNTU, Env, short
from hostile_cases import Case, Launched, check, fix_all, launch
from hostile_fixture import hostile_env
from support import waiting

pytestmark = pytest.mark.e2e
__all__ = ["hostile_env"]

WHERE = "state-config/configmap.yaml:6"


def template(expression: str) -> dict[str, str]:
    """The good recipe with ``expression`` as line 6 of its ConfigMap."""
    text = GOOD_CONFIGMAP.replace('"{{ set.touch }}"', f'"{expression}"')
    assert text.splitlines()[5].endswith(f'"{expression}"')
    return {"state-config/configmap.yaml": text}


def budget(expression: str, text: str) -> Case:
    return Case(template(expression), "TemplateError", WHERE, text)


CASES = {
    "center-two-billion": budget('{{ "x"|center(2000000000) }}', "would build"),
    "indent-a-billion": budget('{{ "a\\nb\\nc"|indent(10**9) }}', "would build"),
    "repetition": budget('{{ "x" * 10**10 }}', "would build"),
    "format-width": budget('{{ "%0999999999d"|format(1) }}', "would build"),
    "join-with-a-long-separator": budget('{{ range(100000)|join("x" * 1000000) }}', "bytes"),
    "a-million-bit-integer": budget("{{ (2**1000)**1000 }}", "16384 bits"),
    "nested-loops": budget(
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "loops ran more than 1000000 times",
    ),
    "lipsum": budget("{{ lipsum(10**6) }}", "lipsum"),
    "doubling-lists": budget(
        "{% set a = [1] %}" + "{% set a = [a, a] %}" * 40 + "{{ a == a }}",
        "prints to more than 8388608 bytes",
    ),
    "doubling-strings": budget('{% set s = "x" %}' + "{% set s = s ~ s %}" * 40 + "{{ s }}", "bytes"),
    "a-billion-range": budget("{{ range(10**9)|list|length }}", "MAX_RANGE"),
    "not-utf-8": Case(
        {"state-config/configmap.yaml": GOOD_CONFIGMAP.encode() + b"  bad: \xff\xfe\n"},
        "RecipeInvalid",
        "state-config/configmap.yaml:7",
        "not UTF-8 text (byte 0xff)",
    ),
}


@pytest.fixture(scope="module")
def launched(hx: Env) -> Launched:
    return launch(hx, CASES, "hx-render")


@pytest.mark.parametrize("case_id", sorted(set(CASES) - {"not-utf-8"}))
async def test_a_template_past_the_render_budget_is_a_template_error_at_its_line(
    hx: Env, launched: Launched, case_id: str
) -> None:
    await check(hx, launched, case_id)


async def test_a_file_that_is_not_utf8_breaks_only_its_own_specialresource(
    hx: Env, launched: Launched
) -> None:
    first, second = short("hx-dep"), short("hx-dep")
    hx.dir_recipe(first, GOOD_FILES)
    hx.dir_recipe(second, GOOD_FILES)
    base = hx.sr(short("hx-base"), first)
    dependent = hx.sr(short("hx-dependent"), second, dependencies=[{"name": base}])
    await hx.ready(base, dependent)
    rival = hx.sr(short("hx-rival"), first)  # the same recipe on the same node: loses to base
    await hx.degraded(rival, "ConflictingNodeSelector")
    await check(hx, launched, "not-utf-8")
    hx.patch_sr(rival, {"spec": {"set": {"touch": "moved"}}})
    await waiting.wait_for(
        lambda: hx.status(rival).get("observedGeneration") == 2,
        timeout=10,
        message="the losing SpecialResource reconciled its change",
    )
    assert srs.condition(hx.status(rival), "Degraded")["reason"] == "ConflictingNodeSelector"
    # Peers summarise every SpecialResource, the broken one's recipe included: still reconciling.
    hx.patch_sr(dependent, {"spec": {"set": {"touch": "moved"}}})
    await waiting.wait_for(
        lambda: (
            hx.cluster.kubectl_json("get", "configmap", "greeting", "-n", dependent)["data"]["touch"]
            == "moved"
        ),
        timeout=10,
        message="the dependent SpecialResource applied its change",
    )
    # A node change is still handled: a new node of the group is picked up by both.
    pool = short(hx.group)
    (extra,) = hx.cluster.add_nodes(srs.pool_inventory(hx.group, [{**UBUNTU, "name": pool, "prefix": pool}]))
    try:

        def both_on_two() -> bool:
            return all(
                (hx.status(n).get("nodes") or {}) == {"selected": 2, "complete": 2} for n in (base, dependent)
            )

        await waiting.wait_for(both_on_two, timeout=20, interval=0.5, message="the new node walked")
    finally:
        hx.cluster.delete_nodes([extra])
    await waiting.wait_for(
        lambda: all((hx.status(n).get("nodes") or {}).get("selected") == 1 for n in (base, dependent)),
        timeout=20,
        interval=0.5,
        message="the removed node let go",
    )
    await hx.after_case()


async def test_every_fixed_recipe_converges_without_a_restart(hx: Env, launched: Launched) -> None:
    await fix_all(hx, launched)
