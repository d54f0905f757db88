"""``sro render --graph``: a recipe's states as a mermaid flowchart (sro.render.graph).

Covers the edges (``after``, its default, fan-out and fan-in), the closing ``complete``
box, the per-kernel marker, and ids that stay safe whatever a state is called. What the
docs show of the built-in recipes is checked in tests/unit/docs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sro.render import graph
from sro.render import recipe as recipe_

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


def _recipe(tmp_path: Path, header: str, states: dict[str, str]) -> recipe_.Recipe:
    root = tmp_path / "acme"
    root.mkdir()
    (root / "recipe.yaml").write_text(header)
    for name, text in states.items():
        (root / name).mkdir()
        (root / name / "objects.yaml").write_text(text)
    return recipe_.load_directory(root)


def _config_map(name: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"


def test_states_follow_their_after_lists_and_end_in_the_complete_label(tmp_path: Path) -> None:
    recipe = _recipe(
        tmp_path,
        "states:\n  - name: end\n  - name: a--b\n  - name: side\n    after: [end]\n",
        {"end": _config_map("one"), "a--b": _config_map("two"), "side": _config_map("three")},
    )
    text = graph.mermaid(recipe, sr_name="fpga")
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    assert '    s0["end<br/>fpga.sro.dev/end=ready"]' in lines
    assert '    s1["a--b<br/>fpga.sro.dev/a--b=ready"]' in lines
    assert '    done(["fpga.sro.dev/complete=true"])' in lines
    edges = [line.strip() for line in lines if "-->" in line]
    # a--b comes after end by default; side after end too; both are last.
    assert edges == ["s0 --> s1", "s0 --> s2", "s1 --> done", "s2 --> done"]


def test_a_state_with_a_kernel_affine_document_says_it_runs_per_kernel_group(tmp_path: Path) -> None:
    affine = _config_map("driver") + '  annotations:\n    sro.dev/kernel-affine: "true"\n'
    recipe = _recipe(
        tmp_path,
        "states:\n  - name: driver\n",
        {"driver": affine.replace("driver\n", "driver-{{ kernel.full }}\n", 1)},
    )
    assert "driver<br/>per kernel group<br/>acme.sro.dev/driver=ready" in graph.mermaid(recipe)
