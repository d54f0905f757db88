"""The command line's words: every subcommand, flag and environment fallback of ``sro``.

Kept apart from ``sro.cli`` (which does what the words ask) so the whole surface an
administrator types can be read in one place, and so each checked flag refuses a bad
value the same way whether it came from the command line or from the environment.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from sro import cli_types as types

DEFAULT_METRICS_ADDR = ":8080"
"""Every interface, port 8080: controller-runtime's metrics port, what a ServiceMonitor and
the Deployment expect; reachable on a laptop too."""
DEFAULT_PROBE_ADDR = ":8081"
"""Every interface, port 8081: controller-runtime's probe port (the kubelet probes the pod's IP)."""


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


def _flag(
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


def _kube_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        default=None,
        metavar="FILE",
        type=_named(types.optional_file),
        help="the kubeconfig (env KUBECONFIG; default: ~/.kube/config, or the service account in a pod)",
    )
    _flag(parser, "--context", "SRO_CONTEXT", "", "the kubeconfig context (default: its current-context)")


def _proxy_flags(parser: argparse.ArgumentParser) -> None:
    _flag(
        parser, "--http-proxy", "SRO_HTTP_PROXY", "", "HTTP proxy injected into proxy-annotated containers",
        type=types.proxy, metavar="URL",
    )  # fmt: skip
    _flag(
        parser,
        "--https-proxy",
        "SRO_HTTPS_PROXY",
        "",
        "HTTPS proxy injected likewise",
        type=types.proxy,
        metavar="URL",
    )
    _flag(
        parser,
        "--no-proxy",
        "SRO_NO_PROXY",
        "",
        "NO_PROXY list injected likewise",
        type=types.no_proxy,
        metavar="LIST",
    )


def _policy_flag(parser: argparse.ArgumentParser) -> None:
    _flag(
        parser,
        "--recipe-policy",
        "SRO_RECIPE_POLICY",
        "",
        "a YAML file of what recipes may create beyond (or short of) the default policy "
        "(docs/recipes.md); the same for lint, render and run",
        type=types.optional_file,
        metavar="FILE",
    )


def _image_check_flags(parser: argparse.ArgumentParser) -> None:
    _flag(
        parser,
        "--image-check-registries",
        "SRO_IMAGE_CHECK_REGISTRIES",
        "",
        "registries (host[:port], comma-separated; * for every one) whose per-kernel images are "
        "checked before a kernel group's DaemonSet is made, and pinned by digest (default: none)",
        type=types.registries,
        metavar="LIST",
    )
    _flag(
        parser,
        "--image-check-missing-ttl",
        "SRO_IMAGE_CHECK_MISSING_TTL",
        "30",
        "seconds a registry's 'missing' answer is kept: a pushed image is seen within this",
        type=types.positive,
        metavar="SECONDS",
    )


def _api_versions_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--api-versions",
        action="append",
        type=types.api_version,
        metavar="GROUP/VERSION[/KIND]",
        help="a group/version (every kind of it) or group/version/Kind the target cluster serves "
        "beyond the built-in Kubernetes kinds, as helm template takes it; repeatable (offline only)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="sro", description=__doc__.splitlines()[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands.add_parser("version", help="print the version")

    lint = commands.add_parser("lint", help="check recipe directories and SpecialResource files offline")
    lint.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a recipe directory, or a YAML file of SpecialResources and recipe ConfigMaps",
    )
    _policy_flag(lint)
    _api_versions_flag(lint)
    lint.add_argument(
        "--format",
        default="text",
        type=types.one_of("text", "json", "github"),
        help="text (file:line: message), json, or github (workflow commands that annotate a pull request)",
    )

    render = commands.add_parser("render", help="print the objects a SpecialResource would get")
    render.add_argument(
        "--recipe",
        required=True,
        type=types.existing,
        metavar="DIR|FILE",
        help="the recipe directory, or a YAML file of its ConfigMap (labelled sro.dev/recipe)",
    )
    render.add_argument(
        "--graph", action="store_true", help="print the recipe's state graph as a mermaid flowchart instead"
    )
    render.add_argument(
        "--sr",
        type=types.existing_file,
        metavar="FILE",
        help="a SpecialResource YAML file (required unless --graph)",
    )
    where = render.add_mutually_exclusive_group()  # one of them is required unless --graph
    where.add_argument(
        "--nodes",
        type=types.existing_file,
        metavar="INVENTORY",
        help="a node inventory (hack/inventory format) or a file of Node objects",
    )
    where.add_argument(
        "--live",
        action="store_true",
        help="use the nodes and kinds of the cluster in KUBECONFIG (images print as the recipe wrote "
        "them: sro run pins the per-kernel images it checks by digest, see --image-check-registries)",
    )
    render.add_argument(
        "--cluster-version", default="1.36", help="Kubernetes version for templates (offline)"
    )
    _flag(
        render, "--namespace", "SRO_NAMESPACE", "sro-system", "the operator's namespace, for templates",
        type=types.namespace,
    )  # fmt: skip
    _kube_flags(render)  # for --live
    _proxy_flags(render)
    _policy_flag(render)
    _api_versions_flag(render)
    render.add_argument(
        "-o", "--output", default="yaml", type=types.one_of("yaml", "json"),
        help="yaml (commented, a header per state) or json (one kubectl List)",
    )  # fmt: skip
    render.add_argument(
        "--state", action="append", metavar="NAME", help="only the objects of this state (repeatable)"
    )
    render.add_argument(
        "--node", metavar="NAME", help="only what this node gets: its own, its kernel group's, shared ones"
    )

    status = commands.add_parser(
        "status", help="each node of a SpecialResource, state by state, from the cluster (kubectl sro status)"
    )
    status.add_argument("name", nargs="?", metavar="NAME", help="a SpecialResource (default: every one)")
    status.add_argument(
        "-o",
        "--output",
        default="table",
        type=types.one_of("table", "wide", "json"),
        help="table, wide or json",
    )
    status.add_argument("-w", "--watch", action="store_true", help="print again whenever something changed")
    status.add_argument(
        "--interval",
        default=2,
        type=types.positive,
        metavar="SECONDS",
        help="seconds between reads with --watch",
    )
    _kube_flags(status)

    diff = commands.add_parser(
        "diff", help="what run would change on the cluster for a SpecialResource (exit 1 if anything)"
    )
    diff.add_argument(
        "--sr", required=True, metavar="FILE|NAME", help="a SpecialResource YAML file, or the name of one"
    )
    diff.add_argument(
        "--recipe",
        type=types.existing,
        metavar="DIR",
        help="the recipe directory (default: what run uses: a ConfigMap in --namespace, else built in)",
    )
    _flag(
        diff,
        "--namespace",
        "SRO_NAMESPACE",
        "sro-system",
        "the operator's namespace (ConfigMap recipes)",
    )
    _kube_flags(diff)
    _proxy_flags(diff)
    _policy_flag(diff)

    preflight = commands.add_parser(
        "preflight",
        help="check that every image a kernel will need exists in its registry (exit 1 if any does not)",
    )
    preflight.add_argument(
        "names",
        nargs="*",
        metavar="SR",
        help="only these SpecialResources (default: every one given or live)",
    )
    preflight.add_argument(
        "--kernel",
        required=True,
        metavar="VERSION",
        help="the full kernel version, e.g. 5.14.0-503.11.1.el9_5.x86_64",
    )
    preflight.add_argument(
        "--os",
        action="append",
        default=[],
        metavar="ID:VERSION_ID",
        help="an OS release for the kernel, e.g. rhel:9.4 (repeatable; needed offline; "
        "with --live the default is the OS of each node the SpecialResource selects)",
    )
    preflight.add_argument("--arch", default="amd64", help="the nodes' architecture, as Kubernetes names it")
    preflight.add_argument(
        "--recipe",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="a recipe directory (repeatable); a SpecialResource naming another recipe gets the built-in one",
    )
    preflight.add_argument(
        "--sr",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="a file of SpecialResources (repeatable; without one, each --recipe with its defaults)",
    )
    preflight.add_argument(
        "--live",
        action="store_true",
        help="the SpecialResources, drop-in recipes, nodes and pull secrets of the cluster in KUBECONFIG",
    )
    preflight.add_argument(
        "--pull-secret",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="a dockerconfigjson Secret or a Docker config.json to pull with (repeatable)",
    )
    preflight.add_argument(
        "--insecure-registry",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="a registry spoken to over plain HTTP (repeatable; loopback registries always are)",
    )
    preflight.add_argument(
        "--timeout", default=15, type=types.positive, metavar="SECONDS", help="seconds per registry request"
    )
    preflight.add_argument(
        "-o", "--output", default="table", type=types.one_of("table", "json"), help="table or json"
    )
    preflight.add_argument(
        "--cluster-version", default="1.36", help="Kubernetes version for templates (offline)"
    )
    _flag(
        preflight,
        "--namespace",
        "SRO_NAMESPACE",
        "sro-system",
        "the operator's namespace (templates; with --live, its ConfigMap recipes)",
    )
    _kube_flags(preflight)  # for --live
    _proxy_flags(preflight)
    _policy_flag(preflight)

    run = commands.add_parser(
        "run", help="run the operator (KUBECONFIG locally, the service account in a pod)"
    )
    _flag(
        run,
        "--namespace",
        "SRO_NAMESPACE",
        "sro-system",
        "the operator's namespace (ConfigMap recipes, lease)",
        type=types.namespace,
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
        ("--metrics-bind-address", "--metrics-addr"),
        ("SRO_METRICS_BIND_ADDRESS", "SRO_METRICS_ADDR"),
        DEFAULT_METRICS_ADDR,
        "host:port serving /metrics (:port for every interface, 0 for none; the same address "
        "as the probes shares their server)",
        type=types.bind_address,
        metavar="ADDR",
    )
    _flag(
        run,
        ("--health-probe-bind-address", "--health-addr"),
        ("SRO_HEALTH_PROBE_BIND_ADDRESS", "SRO_HEALTH_ADDR"),
        DEFAULT_PROBE_ADDR,
        "host:port serving /healthz and /readyz (:port for every interface, 0 for none)",
        type=types.bind_address,
        metavar="ADDR",
    )
    _kube_flags(run)
    _flag(
        run,
        "--leader-elect",
        "SRO_LEADER_ELECT",
        "true",
        "take a Lease so only one replica writes",
        type=types.boolean,
        metavar="BOOL",
    )
    _flag(
        run,
        "--leader-elect-namespace",
        "SRO_LEADER_ELECT_NAMESPACE",
        "",
        "namespace of the Lease (default: --namespace)",
        type=types.optional_namespace,
    )
    _flag(
        run, "--log-format", "SRO_LOG_FORMAT", "auto", "log format: json, console or auto",
        type=types.one_of("json", "console", "auto"),
    )  # fmt: skip
    _flag(
        run, "--log-level", "SRO_LOG_LEVEL", "info", "lowest level logged: debug, info, warning or error",
        type=types.one_of("debug", "info", "warning", "error"), metavar="LEVEL",
    )  # fmt: skip
    _flag(run, "--workers", "SRO_WORKERS", "4", "concurrent reconciles", type=types.positive)
    _flag(
        run,
        "--write-concurrency",
        "SRO_WRITE_CONCURRENCY",
        "16",
        "writes one reconcile keeps in flight when they do not depend on each other",
        type=types.positive,
    )
    _flag(
        run,
        "--kube-api-qps",
        "SRO_KUBE_API_QPS",
        "200",
        "requests per second to the API server, on average (0: no limit; watches aside)",
        type=types.rate,
    )
    _flag(
        run,
        "--kube-api-burst",
        "SRO_KUBE_API_BURST",
        "400",
        "requests sent at once above --kube-api-qps after a quiet spell",
        type=types.positive,
    )
    _flag(run, "--image", "SRO_IMAGE", "", "the operator's own image, offered to recipes as operator.image")
    _proxy_flags(run)
    _policy_flag(run)
    _image_check_flags(run)
    return parser
