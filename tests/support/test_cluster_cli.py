"""``hack/cluster``'s command line: every subcommand its parser offers runs a function."""

from __future__ import annotations

import argparse

import pytest
from simcluster import cli, cli_args

pytestmark = pytest.mark.unit


def _subcommands(p: argparse.ArgumentParser) -> set[str]:
    (sub,) = (a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def test_each_subcommand_of_the_parser_has_its_function_and_no_function_lacks_one() -> None:
    assert _subcommands(cli_args.parser(description=None)) == set(cli.COMMANDS)


def test_a_subcommand_parses_to_its_name_with_its_options() -> None:
    args = cli_args.parser(description=None).parse_args(["kernel", "n1", "n2", "--to", "6.1.0"])
    assert args.command == "kernel" and args.node == ["n1", "n2"] and args.to == "6.1.0"
    assert cli.COMMANDS[args.command] is cli.cmd_kernel


def test_an_unknown_subcommand_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli_args.parser(description=None).parse_args(["launch"])
    assert "invalid choice" in capsys.readouterr().err
