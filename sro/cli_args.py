"""The command line's words: every subcommand of ``sro`` and the flags each one takes.

Kept apart from ``sro.cli`` (which does what the words ask) so the whole surface an
administrator types can be read in one place; how a flag takes its environment fallback
and refuses a bad value is ``sro.cli_flags``, the same for every subcommand.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sro import cli_types as types
from sro import settings as settings_
from sro.cli_flags import (
    Parser,
    api_versions_flag,
    flag,
    image_check_flags,
    kube_flags,
    policy_flag,
    proxy_flags,
)

DEFAULT_METRICS_ADDR = ":8080"
"""Every interface, port 8080: controller-runtime's metrics port, what a ServiceMonitor and
the Deployment expect; reachable on a laptop too."""
DEFAULT_PROBE_ADDR = ":8081"
"""Every interface, port 8081: controller-runtime's probe port (the kubelet probes the pod's IP)."""
_QUEUE = settings_.QueueSettings()  # what the pace's help says of its fixed parts


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
    policy_flag(lint)
    api_versions_flag(lint)
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
    flag(
        render, "--namespace", "SRO_NAMESPACE", "sro-system", "the operator's namespace, for templates",
        type=types.namespace,
    )  # fmt: skip
    kube_flags(render)  # for --live
    proxy_flags(render)
    policy_flag(render)
    api_versions_flag(render)
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
    render.add_argument(
        "--builds", action="store_true",
        help="also the build Jobs (sro.dev/builds), which sro runs only for a kernel whose image is missing",
    )  # fmt: skip

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
    kube_flags(status)

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
    flag(
        diff,
        "--namespace",
        "SRO_NAMESPACE",
        "sro-system",
        "the operator's namespace (ConfigMap recipes)",
    )
    kube_flags(diff)
    proxy_flags(diff)
    policy_flag(diff)

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
    flag(
        preflight,
        "--namespace",
        "SRO_NAMESPACE",
        "sro-system",
        "the operator's namespace (templates; with --live, its ConfigMap recipes)",
    )
    kube_flags(preflight)  # for --live
    proxy_flags(preflight)
    policy_flag(preflight)

    run = commands.add_parser(
        "run", help="run the operator (KUBECONFIG locally, the service account in a pod)"
    )
    flag(
        run,
        "--namespace",
        "SRO_NAMESPACE",
        "sro-system",
        "the operator's namespace (ConfigMap recipes, lease)",
        type=types.namespace,
    )
    flag(
        run,
        "--recipes",
        "SRO_RECIPE_DIRS",
        "",
        "drop-in recipe directories, separated by ':'; they override built-in recipes of the same name",
    )
    flag(
        run,
        ("--metrics-bind-address", "--metrics-addr"),
        ("SRO_METRICS_BIND_ADDRESS", "SRO_METRICS_ADDR"),
        DEFAULT_METRICS_ADDR,
        "host:port serving /metrics (:port for every interface, 0 for none; the same address "
        "as the probes shares their server)",
        type=types.bind_address,
        metavar="ADDR",
    )
    flag(
        run,
        ("--health-probe-bind-address", "--health-addr"),
        ("SRO_HEALTH_PROBE_BIND_ADDRESS", "SRO_HEALTH_ADDR"),
        DEFAULT_PROBE_ADDR,
        "host:port serving /healthz and /readyz (:port for every interface, 0 for none)",
        type=types.bind_address,
        metavar="ADDR",
    )
    kube_flags(run)
    flag(
        run,
        "--leader-elect",
        "SRO_LEADER_ELECT",
        "true",
        "take a Lease so only one replica writes",
        type=types.boolean,
        metavar="BOOL",
    )
    flag(
        run,
        "--leader-elect-namespace",
        "SRO_LEADER_ELECT_NAMESPACE",
        "",
        "namespace of the Lease (default: --namespace)",
        type=types.optional_namespace,
    )
    flag(
        run, "--log-format", "SRO_LOG_FORMAT", "auto", "log format: json, console or auto",
        type=types.one_of("json", "console", "auto"),
    )  # fmt: skip
    flag(
        run, "--log-level", "SRO_LOG_LEVEL", "info", "lowest level logged: debug, info, warning or error",
        type=types.one_of("debug", "info", "warning", "error"), metavar="LEVEL",
    )  # fmt: skip
    flag(
        run, "--event-loop", "SRO_EVENT_LOOP", "uvloop",
        "event loop: uvloop (asyncio's when uvloop is not installed) or asyncio",
        type=types.one_of("uvloop", "asyncio"),
    )  # fmt: skip
    flag(run, "--workers", "SRO_WORKERS", "4", "concurrent reconciles", type=types.positive)
    flag(
        run,
        "--write-concurrency",
        "SRO_WRITE_CONCURRENCY",
        "16",
        "writes one reconcile keeps in flight when they do not depend on each other",
        type=types.positive,
    )
    flag(
        run,
        "--log-reads-per-second",
        "SRO_LOG_READS_PER_SECOND",
        f"{settings_.ControllerSettings.log_reads_per_second:g}",
        "log tails of pods waiting for their line (wait-for-logs) read again per second, over "
        "the whole fleet: with N pods waiting each is read again at most every N/RATE s "
        "(0: no fleet bound; each pod's own 1-10 s interval); a pod's first read is not held back",
        type=types.rate,
        metavar="RATE",
    )
    flag(
        run,
        "--reconcile-pace",
        "SRO_RECONCILE_PACE",
        f"{_QUEUE.pace:g}",
        f"a SpecialResource kept busy by a flood of changes ({_QUEUE.busy} or more during a pass) "
        "rests PACE-1 times what its last pass spent computing (reading caches, rendering, "
        f"planning; at most {_QUEUE.rest_cap:g} s and {_QUEUE.rest_ratio:g} times the whole pass) "
        "before the next, so computing takes at most 1/PACE of the time (1: no rest)",
        type=types.pace,
        metavar="PACE",
    )
    flag(
        run,
        "--kube-api-qps",
        "SRO_KUBE_API_QPS",
        "200",
        "requests per second to the API server, on average (0: no limit; watches aside)",
        type=types.rate,
    )
    flag(
        run,
        "--kube-api-burst",
        "SRO_KUBE_API_BURST",
        "400",
        "requests sent at once above --kube-api-qps after a quiet spell",
        type=types.positive,
    )
    flag(run, "--image", "SRO_IMAGE", "", "the operator's own image, offered to recipes as operator.image")
    proxy_flags(run)
    policy_flag(run)
    image_check_flags(run)
    return parser
