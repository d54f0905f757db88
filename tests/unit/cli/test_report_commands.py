"""The words of ``sro render --graph``, ``sro status`` and ``sro diff`` (sro.cli_args, sro.cli).

What they print against a cluster is tests/e2e/test_status_and_diff.py; the rows and the
diff view alone are tests/unit/report. Here: the graph needs no SpecialResource, the
flags and their refusals (exit 2, one line), and a diff that cannot start says why
without touching a cluster.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sro import cli
from sro.cli_args import build_parser
from sro.render import graph
from sro.render import recipe as recipe_

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
KMOD = REPO / "assets" / "simple-kmod"


def test_render_graph_prints_the_flowchart_without_a_specialresource(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["render", "--recipe", str(KMOD), "--graph"]) == 0
    out = capsys.readouterr().out
    assert out == graph.mermaid(recipe_.load_directory(KMOD))
    assert "s0 --> s1" in out and "s1 --> done" in out


def test_render_without_graph_still_wants_a_specialresource_and_nodes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["render", "--recipe", str(KMOD)]) == 2
    assert "--sr" in capsys.readouterr().err


def test_status_defaults_and_choices() -> None:
    args = build_parser().parse_args(["status"])
    assert (args.name, args.output, args.watch, args.interval) == (None, "table", False, 2)
    args = build_parser().parse_args(["status", "gpu", "-o", "wide", "--watch", "--interval", "5"])
    assert (args.name, args.output, args.watch, args.interval) == ("gpu", "wide", True, 5)


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "-o", "yaml"],
        ["status", "--interval", "0"],
        ["status", "a", "b"],
        ["diff"],
        ["diff", "--sr", "x", "--recipe", "/no/such/dir"],
    ],
)
def test_a_wrong_word_is_one_line_and_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err


def test_a_diff_of_a_file_without_a_specialresource_says_so_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-an-sr}\n")
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\nusers: [{name: u, user: {}}]\n"
    )
    assert cli.main(["diff", "--sr", str(empty), "--kubeconfig", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sro diff: ") and "no SpecialResource in the file" in err
