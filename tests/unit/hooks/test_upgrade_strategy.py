"""Which DaemonSets get the OnDelete strategy (sro.hooks.upgrade): kernel-affine and
sro.dev/upgrade-marked ones; every other keeps what its recipe wrote. Covered: the
rule, the opt-out, replacing rollingUpdate parameters, and the built-in driver."""

from __future__ import annotations

import pytest
from conftest import daemonset, make_node, make_recipe, make_sr, render

from sro.errors import RecipeInvalid
from sro.model import desired

pytestmark = pytest.mark.unit

AFFINE = '    sro.dev/kernel-affine: "true"\n'
ROLLING = "  updateStrategy:\n    type: RollingUpdate\n    rollingUpdate:\n      maxUnavailable: 2\n"


def _rolling(doc: str) -> str:
    return doc.replace("  template:\n", ROLLING + "  template:\n", 1)


def _strategies(docs: dict[str, str]) -> dict[str, object]:
    result: desired.DesiredState = render(make_sr(), make_recipe({"s": docs}), [make_node("a")])
    return {
        o.body["metadata"]["name"].split("-")[0]: o.body["spec"].get("updateStrategy") for o in result.objects
    }


def test_kernel_affine_and_marked_daemonsets_are_on_delete_and_others_keep_theirs() -> None:
    strategies = _strategies(
        {
            "a.yaml": daemonset("affine", annotations=AFFINE),
            "b.yaml": daemonset("marked", annotations='    sro.dev/upgrade: "true"\n'),
            "c.yaml": daemonset("plain"),
            "d.yaml": _rolling(daemonset("rolling")),
        }
    )
    assert strategies["affine"] == {"type": "OnDelete"}
    assert strategies["marked"] == {"type": "OnDelete"}
    assert strategies["plain"] is None  # the API server defaults it to RollingUpdate
    assert strategies["rolling"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}


def test_a_kernel_affine_daemonset_marked_false_keeps_its_strategy_and_parameters_never_stay() -> None:
    strategies = _strategies(
        {
            "a.yaml": _rolling(daemonset("optout", annotations=AFFINE + '    sro.dev/upgrade: "false"\n')),
            "b.yaml": _rolling(daemonset("forced", annotations='    sro.dev/upgrade: "true"\n')),
        }
    )
    assert strategies["optout"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}
    assert strategies["forced"] == {"type": "OnDelete"}


def test_an_invalid_value_is_refused() -> None:
    with pytest.raises(RecipeInvalid, match=r"sro\.dev/upgrade"):
        _strategies({"a.yaml": daemonset("x", annotations='    sro.dev/upgrade: "yes"\n')})
