"""A failure that reaches ``sro`` wrapped in an exception group (a task group of watches or
workers ends that way) is said as itself: one line, its own message, the right exit code."""

from __future__ import annotations

import argparse

import pytest

from sro import cli, errors

pytestmark = pytest.mark.unit


def _fails_with(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    def handler(args: argparse.Namespace) -> int:
        raise exc

    monkeypatch.setattr(cli, "_version", handler)


def test_an_api_error_inside_a_task_group_is_said_as_itself(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = errors.NotFound("specialresources.sro.dev/v1alpha1 is not served", reason="NotFound")
    _fails_with(monkeypatch, ExceptionGroup("unhandled errors in a TaskGroup", [missing]))
    assert cli.main(["version"]) == 1
    err = capsys.readouterr().err
    assert err == f"sro version: {missing}\n"
    assert "is not served" in err and "TaskGroup" not in err


def test_a_bug_nested_in_groups_is_named_by_its_type(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    inner = ExceptionGroup("inner", [RuntimeError("boom"), ValueError("second")])
    _fails_with(monkeypatch, ExceptionGroup("outer", [inner]))
    assert cli.main(["version"]) == 1
    assert capsys.readouterr().err == "sro version: RuntimeError: boom\n"


def test_an_interrupt_inside_a_group_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fails_with(monkeypatch, BaseExceptionGroup("stopping", [KeyboardInterrupt()]))
    assert cli.main(["version"]) == 130
    assert capsys.readouterr().err == ""
