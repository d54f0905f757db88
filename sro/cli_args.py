"""The command line's words: every subcommand, flag and environment fallback of ``sro``.

Kept apart from ``sro.cli`` (which does what the words ask) so the whole surface an
administrator types can be read in one place, and so each checked flag refuses a bad
value the same way whether it came from the command line or from the environment.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

DEFAULT_ADDR = "127.0.0.1:8080"


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


def _flag(parser: argparse.ArgumentParser, flag: str, env: str, default: str, text: str, **kw: Any) -> None:
    """A flag whose default comes from ``env``. argparse passes a string default through
    ``type`` but never checks it against ``choices``, so checked flags take a ``type``
    (``_boolean``, ``_one_of``, ``_positive``): an environment value is refused exactly
    like the same value on the command line, with exit 2 and one line."""
    parser.add_argument(
        flag, default=_env(env, default), help=f"{text} (env {env}; default: %(default)r)", **kw
    )


_TRUE = frozenset({"true", "1", "yes", "on", "t", "y"})
_FALSE = frozenset({"false", "0", "no", "off", "f", "n"})


def _boolean(text: str) -> str:
    """``true`` or ``false`` from any of the usual spellings, in any case; else an error."""
    word = text.strip().lower()
    if word in _TRUE:
        return "true"
    if word in _FALSE:
        return "false"
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (true/false, 1/0, yes/no, on/off)")


def _one_of(*words: str) -> Any:
    def pick(text: str) -> str:
        word = text.strip().lower()
        if word not in words:
            raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(words)}")
        return word

    return pick


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return number


def _proxy_flags(parser: argparse.ArgumentParser) -> None:
    _flag(parser, "--http-proxy", "SRO_HTTP_PROXY", "", "HTTP proxy injected into proxy-annotated containers")
    _flag(parser, "--https-proxy", "SRO_HTTPS_PROXY", "", "HTTPS proxy injected likewise")
    _flag(parser, "--no-proxy", "SRO_NO_PROXY", "", "NO_PROXY list injected likewise")


def _policy_flag(parser: argparse.ArgumentParser) -> None:
    _flag(
        parser,
        "--recipe-policy",
        "SRO_RECIPE_POLICY",
        "",
        "a YAML file of what recipes may create beyond (or short of) the default policy "
        "(docs/recipes.md); the same for lint, render and run",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sro", description=__doc__.splitlines()[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands.add_parser("version", help="print the version")

    lint = commands.add_parser("lint", help="check recipe directories and SpecialResource files offline")
    lint.add_argument(
        "paths", nargs="+", metavar="PATH", help="a recipe directory, or a YAML file of SpecialResources"
    )
    _policy_flag(lint)

    render = commands.add_parser("render", help="print the objects a SpecialResource would get")
    render.add_argument("--recipe", required=True, type=Path, metavar="DIR", help="the recipe directory")
    render.add_argument("--sr", required=True, type=Path, metavar="FILE", help="a SpecialResource YAML file")
    where = render.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--nodes",
        type=Path,
        metavar="INVENTORY",
        help="a node inventory (hack/inventory format) or a file of Node objects",
    )
    where.add_argument(
        "--live", action="store_true", help="use the nodes and kinds of the cluster in KUBECONFIG"
    )
    render.add_argument(
        "--cluster-version", default="1.36", help="Kubernetes version for templates (offline)"
    )
    _flag(render, "--namespace", "SRO_NAMESPACE", "sro-system", "the operator's namespace, for templates")
    _proxy_flags(render)
    _policy_flag(render)

    run = commands.add_parser(
        "run", help="run the operator (KUBECONFIG locally, the service account in a pod)"
    )
    _flag(
        run,
        "--namespace",
        "SRO_NAMESPACE",
        "sro-system",
        "the operator's namespace (ConfigMap recipes, lease)",
    )
    _flag(
        run,
        "--recipes",
        "SRO_RECIPE_DIRS",
        "",
        "drop-in recipe directories, separated by ':'; they override built-in recipes of the same name",
    )
    _flag(
        run,
        "--metrics-addr",
        "SRO_METRICS_ADDR",
        DEFAULT_ADDR,
        "host:port serving /metrics (the same server as --health-addr; set one of the two)",
    )
    _flag(run, "--health-addr", "SRO_HEALTH_ADDR", DEFAULT_ADDR, "host:port serving /healthz and /readyz")
    _flag(
        run,
        "--leader-elect",
        "SRO_LEADER_ELECT",
        "true",
        "take a Lease so only one replica writes",
        type=_boolean,
        metavar="BOOL",
    )
    _flag(
        run,
        "--leader-elect-namespace",
        "SRO_LEADER_ELECT_NAMESPACE",
        "",
        "namespace of the Lease (default: --namespace)",
    )
    _flag(
        run, "--log-format", "SRO_LOG_FORMAT", "auto", "log format: json, console or auto",
        type=_one_of("json", "console", "auto"),
    )  # fmt: skip
    _flag(run, "--workers", "SRO_WORKERS", "4", "concurrent reconciles", type=_positive)
    _flag(
        run,
        "--write-concurrency",
        "SRO_WRITE_CONCURRENCY",
        "16",
        "writes one reconcile keeps in flight when they do not depend on each other",
        type=_positive,
    )
    _flag(run, "--image", "SRO_IMAGE", "", "the operator's own image, offered to recipes as operator.image")
    _proxy_flags(run)
    _policy_flag(run)
    return parser
