"""``sro run`` flags and their environment fallbacks are checked alike (sro.cli).

An environment value used to bypass argparse's ``choices``: ``SRO_LEADER_ELECT=True``
turned leader election *off*. Every checked flag now refuses a bad value from either
source with exit 2 and one line naming the flag.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from sro import app, cli

pytestmark = pytest.mark.unit


def parse(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], *argv: str) -> argparse.Namespace:
    for name in ("SRO_LEADER_ELECT", "SRO_LOG_FORMAT", "SRO_WORKERS", "SRO_WRITE_CONCURRENCY",
                 "SRO_RECONCILE_PACE", "SRO_LOG_READS_PER_SECOND"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return cli.build_parser().parse_args(["run", *argv])


SPELLINGS = [
    ("True", "true"),
    ("1", "true"),
    ("YES", "true"),
    ("on", "true"),
    ("False", "false"),
    ("0", "false"),
]


@pytest.mark.parametrize(("value", "expected"), SPELLINGS)
def test_leader_election_accepts_the_usual_spellings_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: str
) -> None:
    assert parse(monkeypatch, {"SRO_LEADER_ELECT": value}).leader_elect == expected


def test_leader_election_is_on_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse(monkeypatch, {}).leader_elect == "true"


@pytest.mark.parametrize(
    ("env", "argv", "flag"),
    [
        ({"SRO_LEADER_ELECT": "maybe"}, (), "--leader-elect"),
        ({}, ("--leader-elect", "maybe"), "--leader-elect"),
        ({"SRO_LOG_FORMAT": "xml"}, (), "--log-format"),
        ({"SRO_WORKERS": "0"}, (), "--workers"),
        ({}, ("--workers", "-3"), "--workers"),
        ({"SRO_WRITE_CONCURRENCY": "many"}, (), "--write-concurrency"),
        ({"SRO_RECONCILE_PACE": "0.5"}, (), "--reconcile-pace"),
        ({}, ("--reconcile-pace", "nan"), "--reconcile-pace"),
        ({"SRO_LOG_READS_PER_SECOND": "-1"}, (), "--log-reads-per-second"),
        ({}, ("--log-reads-per-second", "inf"), "--log-reads-per-second"),
    ],
)
def test_a_bad_value_from_either_source_is_exit_2_naming_the_flag(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env: dict[str, str],
    argv: tuple[str, ...],
    flag: str,
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse(monkeypatch, env, *argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}:" in err and "Traceback" not in err


def test_the_reconcile_pace_reaches_the_queue_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli.run_settings(parse(monkeypatch, {})).queue.pace == 4.0
    assert cli.run_settings(parse(monkeypatch, {"SRO_RECONCILE_PACE": "1"})).queue.pace == 1.0
    assert cli.run_settings(parse(monkeypatch, {}, "--reconcile-pace", "2.5")).queue.pace == 2.5


def test_the_fleets_log_read_rate_reaches_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """From the flag or its variable to the engine that hands it to every plan."""
    for env, argv, rate in (
        ({}, (), 50.0),
        ({"SRO_LOG_READS_PER_SECOND": "0"}, (), 0.0),
        ({}, ("--log-reads-per-second", "200"), 200.0),
    ):
        settings = cli.run_settings(parse(monkeypatch, env, *argv))
        assert settings.controller.log_reads_per_second == rate
        engine, _ = app.engine_settings(settings)
        assert engine.log_reads_per_second == rate


def test_log_format_is_read_in_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse(monkeypatch, {"SRO_LOG_FORMAT": "JSON"}).log_format == "json"


def test_a_missing_kubeconfig_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere" / "kubeconfig"
    monkeypatch.setenv("KUBECONFIG", str(missing))
    code = cli.main(
        ["run", "--leader-elect", "false", "--health-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"]
    )
    err = capsys.readouterr().err
    assert code != 0
    assert f"KUBECONFIG '{missing}' is not a readable file" in err
    assert "Traceback" not in err and "current-context" not in err
