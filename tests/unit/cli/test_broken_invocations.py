"""Every ``sro`` subcommand, asked wrongly, exits 2 with one line on stderr and no traceback.

Covers: an unknown flag for each subcommand; a bad value for every option whose value is
checked, from the command line and from its environment variable (the line then names
the variable); missing files named by flags; a missing kubeconfig, one without a
current-context and an unknown context, for ``run`` and ``render --live`` (found before
anything connects); malformed bind addresses. Subcommands and options are read from the
parser, so one added later is covered too. A few cases run ``python -m sro`` for real;
the rest call ``cli.main`` in-process. Not covered: what the commands do when asked
rightly (the other CLI tests).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sro import cli, cli_args
from sro.kube import config as kubeconfig

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
BROKEN = "no/such/thing:x"
"""A value every checked option refuses: no such file, not a number, boolean, word or address."""


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli_args.build_parser()
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def _checked_options() -> Iterator[tuple[str, str, str]]:
    """(subcommand, option, env or "") for every option that checks its value."""
    for name, sub in _subcommands().items():
        for action in sub._actions:
            if action.option_strings and action.type not in (None, str, Path) and action.nargs != 0:
                env = re.search(r"\benv (SRO_[A-Z_]+)", action.help or "")
                yield name, action.option_strings[0], env.group(1) if env else ""


CHECKED = sorted(_checked_options())


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("SRO_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))  # nothing ever connects


def _one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    try:
        code = cli.main(argv)
    except SystemExit as exited:
        code = exited.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert code == 2, (argv, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_the_parser_names_run_lint_render_and_version() -> None:
    assert {"run", "lint", "render", "version"} <= set(_subcommands())
    assert ("run", "--workers", "SRO_WORKERS") in CHECKED
    assert ("run", "--metrics-bind-address", "SRO_METRICS_BIND_ADDRESS") in CHECKED


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_an_unknown_flag_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], command: str) -> None:
    err = _one_line_exit_2(capsys, [command, "--no-such-flag"])
    assert err.startswith("sro") and "error:" in err, err  # the flag, or a missing required one


@pytest.mark.parametrize(("command", "option", "env"), CHECKED)
def test_a_bad_value_on_the_command_line_is_refused(
    capsys: pytest.CaptureFixture[str], command: str, option: str, env: str
) -> None:
    err = _one_line_exit_2(capsys, [command, f"{option}={BROKEN}"])
    assert f"argument {option}" in err, err


@pytest.mark.parametrize(("command", "option", "env"), [c for c in CHECKED if c[2]])
def test_a_bad_value_in_the_environment_is_refused_naming_the_variable(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str, option: str, env: str
) -> None:
    monkeypatch.setenv(env, BROKEN)
    err = _one_line_exit_2(capsys, [command])
    assert f"argument {option}" in err and f"(from {env})" in err, err


@pytest.mark.parametrize(
    ("env", "value"),
    [
        ("SRO_WORKERS", "0"),
        ("SRO_LEADER_ELECT", "maybe"),
        ("SRO_LOG_LEVEL", "verbose"),
        ("SRO_LOG_FORMAT", "xml"),
        ("SRO_EVENT_LOOP", "trio"),
        ("SRO_NAMESPACE", "Not_A_Namespace"),
        ("SRO_METRICS_ADDR", "localhost"),
        ("SRO_HEALTH_PROBE_BIND_ADDRESS", "127.0.0.1:65536"),
        ("SRO_HEALTH_ADDR", "[not-ip]:80"),
    ],
)
def test_run_refuses_each_bad_environment_value(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, env: str, value: str
) -> None:
    monkeypatch.setenv(env, value)
    assert f"(from {env})" in _one_line_exit_2(capsys, ["run"])


def test_run_takes_uvloop_unless_asked_for_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvloop  # noqa: PLC0415 - a dependency of sro on this platform

    assert cli.build_parser().parse_args(["run"]).event_loop == "uvloop"
    assert cli._event_loop("uvloop") is uvloop.new_event_loop
    monkeypatch.setenv("SRO_EVENT_LOOP", "asyncio")
    chosen = cli.build_parser().parse_args(["run"]).event_loop
    assert chosen == "asyncio" and cli._event_loop(chosen) is None  # asyncio.Runner's default loop


def test_leader_election_stays_on_for_true_in_any_spelling(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("True", "TRUE", "1", "yes", "On"):
        monkeypatch.setenv("SRO_LEADER_ELECT", value)
        assert cli.run_settings(cli.build_parser().parse_args(["run"])).lease.enabled is True


def _kubeconfig(path: Path, *, current: str) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: a, context: {cluster: c, user: u}}]\n"
        "users: [{name: u, user: {token: t}}]\n" + (f"current-context: {current}\n" if current else "")
    )
    return path


RENDER_LIVE = [
    "render",
    "--recipe",
    str(REPO / "assets" / "simple-kmod"),
    "--sr",
    str(REPO / "tests" / "golden" / "simple-kmod.sr.yaml"),
    "--live",
]


LIVE = {
    "run": ["run"],
    "render": RENDER_LIVE,
    "status": ["status"],
    "diff": ["diff", "--sr", "gpu"],
    "preflight": ["preflight", "--kernel", "5.14.0", "--live"],
}
"""Each subcommand that reads the cluster, asked to (the others are given no kubeconfig flag)."""


@pytest.mark.parametrize("argv", [LIVE[c] for c in sorted(LIVE) if c in _subcommands()], ids=" ".join)
def test_kubeconfig_mistakes_are_one_line_saying_what(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str]
) -> None:
    missing = tmp_path / "no-kubeconfig"
    err = _one_line_exit_2(capsys, argv)
    assert f"KUBECONFIG '{missing}' is not a readable file" in err
    err = _one_line_exit_2(capsys, [*argv, "--kubeconfig", str(missing)])
    assert "argument --kubeconfig" in err and "does not exist" in err
    empty = tmp_path / "empty"
    empty.write_text("apiVersion: v1\nkind: Config\n")
    err = _one_line_exit_2(capsys, [*argv, "--kubeconfig", str(empty)])
    assert err.endswith("has no current-context and no context\n"), err
    no_current = _kubeconfig(tmp_path / "no-current", current="")
    monkeypatch.setenv("KUBECONFIG", str(no_current))
    err = _one_line_exit_2(capsys, argv)
    assert "has no current-context: pass --context (one of a)" in err and "Expected key" not in err
    err = _one_line_exit_2(capsys, [*argv, "--context", "elsewhere"])
    assert "has no context 'elsewhere' (it has a)" in err
    dangling = _kubeconfig(tmp_path / "dangling", current="b")
    err = _one_line_exit_2(capsys, [*argv, "--kubeconfig", str(dangling)])
    assert "has no context 'b'" in err


def test_a_context_without_a_kubeconfig_in_a_pod_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setattr(kubeconfig, "in_cluster", lambda: True)
    assert "no kubeconfig to take it from" in _one_line_exit_2(capsys, ["run", "--context", "a"])


@pytest.mark.parametrize(
    "argv",
    [
        ["render", "--recipe", str(REPO / "assets" / "simple-kmod"), "--sr", "missing.yaml", "--nodes", "x"],
        ["render", "--recipe", "no-such-recipe", "--sr", "missing.yaml", "--live"],
        ["lint", "assets", "--recipe-policy", "missing.yaml"],
    ],
    ids=["missing --sr", "missing --recipe", "missing --recipe-policy"],
)
def test_a_missing_file_named_by_a_flag_is_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert "does not exist" in _one_line_exit_2(capsys, argv)


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["run", "--health-addr", "localhost"], {}),
        (["run"], {"SRO_LEADER_ELECT": "maybe"}),
        (["lint"], {}),
        (["nonsense"], {}),
    ],
)
def test_the_real_command_prints_one_line_and_exits_2(
    tmp_path: Path, argv: list[str], env: dict[str, str]
) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SRO_")}
    environ.update(env, KUBECONFIG=str(tmp_path / "none"))
    done = subprocess.run(
        [sys.executable, "-m", "sro", *argv],
        capture_output=True,
        text=True,
        env=environ,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
