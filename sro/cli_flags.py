"""How one ``sro`` flag is declared: its environment fallback, its checked type, its help.

Kept apart from the list of subcommands (``sro.cli_args``) because every flag goes
through the same few rules, whichever subcommand has it: a default taken from the
environment is checked by the flag's ``type`` exactly like a value typed on the command
line, a refused value names the variable it came from, and a usage error is one line.
The flag groups several subcommands share (cluster access, proxies, the recipe policy,
image checks, declared API versions) live here once.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from sro import cli_types as types


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (what was wrong) and exit 2, without the usage
    block: under a supervisor the last line of the log is the one that is read."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


class _FromEnv(str):
    """A default taken from an environment variable: its name goes into the error message."""

    env: str


def _env(names: Sequence[str], default: str) -> str:
    for name in names:
        if name in os.environ:
            value = _FromEnv(os.environ[name])
            value.env = name
            return value
    return default


def _named(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """``convert``, naming the environment variable a refused default came from."""

    def named(text: str) -> Any:
        try:
            return convert(text)
        except argparse.ArgumentTypeError as exc:
            if isinstance(text, _FromEnv):
                raise argparse.ArgumentTypeError(f"{exc} (from {text.env})") from None
            raise

    named.__name__ = getattr(convert, "__name__", "value")
    return named


def flag(
    parser: argparse.ArgumentParser,
    flag: str | Sequence[str],
    env: str | Sequence[str],
    default: str,
    text: str,
    **kw: Any,
) -> None:
    """A flag (the first name; the others are aliases) whose default comes from the first
    of ``env`` that is set. argparse passes a string default through ``type`` but never
    checks it against ``choices``, so checked flags take a ``type`` (``boolean``,
    ``one_of``, ``positive``, ``bind_address`` ...): an environment value is refused
    exactly like the same value on the command line, with exit 2 and one line."""
    flags = (flag,) if isinstance(flag, str) else tuple(flag)
    envs = (env,) if isinstance(env, str) else tuple(env)
    if "type" in kw:
        kw["type"] = _named(kw["type"])
    where = f"env {envs[0]}{''.join(f', alias env {e}' for e in envs[1:])}; default: %(default)r"
    parser.add_argument(*flags, default=_env(envs, default), help=f"{text} ({where})", **kw)


def kube_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        default=None,
        metavar="FILE",
        type=_named(types.optional_file),
        help="the kubeconfig (env KUBECONFIG; default: ~/.kube/config, or the service account in a pod)",
    )
    flag(parser, "--context", "SRO_CONTEXT", "", "the kubeconfig context (default: its current-context)")


def proxy_flags(parser: argparse.ArgumentParser) -> None:
    flag(
        parser, "--http-proxy", "SRO_HTTP_PROXY", "", "HTTP proxy injected into proxy-annotated containers",
        type=types.proxy, metavar="URL",
    )  # fmt: skip
    flag(
        parser,
        "--https-proxy",
        "SRO_HTTPS_PROXY",
        "",
        "HTTPS proxy injected likewise",
        type=types.proxy,
        metavar="URL",
    )
    flag(
        parser,
        "--no-proxy",
        "SRO_NO_PROXY",
        "",
        "NO_PROXY list injected likewise",
        type=types.no_proxy,
        metavar="LIST",
    )


def policy_flag(parser: argparse.ArgumentParser) -> None:
    flag(
        parser,
        "--recipe-policy",
        "SRO_RECIPE_POLICY",
        "",
        "a YAML file of what recipes may create beyond (or short of) the default policy "
        "(docs/recipes.md); the same for lint, render and run",
        type=types.optional_file,
        metavar="FILE",
    )


def image_check_flags(parser: argparse.ArgumentParser) -> None:
    flag(
        parser,
        "--image-check-registries",
        "SRO_IMAGE_CHECK_REGISTRIES",
        "",
        "registries (host[:port], comma-separated; * for every one) whose per-kernel images are "
        "checked before a kernel group's DaemonSet is made, and pinned by digest (default: none)",
        type=types.registries,
        metavar="LIST",
    )
    flag(
        parser,
        "--image-check-missing-ttl",
        "SRO_IMAGE_CHECK_MISSING_TTL",
        "30",
        "seconds a registry's 'missing' answer is kept: a pushed image is seen within this",
        type=types.positive,
        metavar="SECONDS",
    )


def api_versions_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--api-versions",
        action="append",
        type=types.api_version,
        metavar="GROUP/VERSION[/KIND]",
        help="a group/version (every kind of it) or group/version/Kind the target cluster serves "
        "beyond the built-in Kubernetes kinds, as helm template takes it; repeatable (offline only)",
    )
