"""The ``sro`` command: ``run`` the operator, or ``lint`` and ``render`` recipes offline.

``lint`` and ``render`` use the very code ``run`` uses (``sro.hooks.pipeline``), so what
they print is what the operator would apply. Exit status: 0 fine, 1 something invalid,
2 a usage error. Every ``run`` flag has an environment fallback, named in ``--help``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib
import inspect
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import sro
from sro import cli_lint, errors
from sro import settings as settings_
from sro.cli_args import build_parser
from sro.hooks import builds, offline_inputs, pipeline
from sro.model import desired, inventory, recipe_policy, views
from sro.model import specialresource as srmodel
from sro.render import graph, kinds, policy_file, printing, values
from sro.render import recipe as recipe_

if TYPE_CHECKING:
    from sro.kube import discovery  # only --live talks to a cluster; imported there


_one_line = cli_lint.one_line
_print_warning = cli_lint.print_warning


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):  # a file name that is not UTF-8 prints escaped
            stream.reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    handler = {
        "version": _version,
        "lint": cli_lint.run,
        "render": _render,
        "run": _run,
        "preflight": _preflight,
        "status": _status,
        "diff": _diff,
    }[args.command]
    try:
        try:
            return handler(args)
        except BaseExceptionGroup as group:
            # A task group (the watches, the workers) ends with its failures wrapped; the
            # first one is what went wrong, said like any other.
            raise _first_of(group) from group
    except errors.UsageError as exc:
        print(f"sro {args.command}: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except errors.SroError as exc:
        print(f"sro {args.command}: {_one_line(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        # Whatever is left is a bug or a machine problem (no API server, a full disk): one
        # line saying what, never a traceback, and a non-zero exit a supervisor restarts.
        text = " ".join(str(exc).split())[:300]
        print(f"sro {args.command}: {type(exc).__name__}: {text}", file=sys.stderr)
        return 1


def _first_of(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first exception a (possibly nested) exception group holds."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _version(args: argparse.Namespace) -> int:
    print(f"sro {sro.__version__}")
    return 0


# --- render -----------------------------------------------------------------------------------


def _render(args: argparse.Namespace) -> int:
    loaded = offline_inputs.load_recipe(args.recipe)
    recipe = loaded.recipe
    if args.graph:
        sys.stdout.write(graph.mermaid(recipe))
        return 0
    if args.sr is None or not (args.nodes or args.live):
        raise errors.UsageError("--sr and one of --nodes or --live are required (unless --graph)")
    inputs = offline_inputs.read(args.sr, namespace=args.namespace)
    if inputs.problems:
        raise inputs.problems[0]
    if not inputs.srs:
        raise errors.RecipeError(
            "no SpecialResource in the file", location=errors.Location(file=str(args.sr))
        )
    sr = inputs.srs[0].sr
    try:
        result = _render_desired(args, sr, recipe)
    except errors.RecipeError as exc:  # at the line of the file given, when it was a ConfigMap
        raise loaded.relocate(offline_inputs.relocate_values(exc, {sr.name: inputs.srs[0]})) from None
    if not args.builds:  # a build Job runs only for an image the registry lacks
        result = builds.without_builds(result)
    refused = printing.refused_filter(result, states=args.state or (), node=args.node)
    if refused:
        print(f"sro render: {refused}", file=sys.stderr)
        return 2
    result = printing.select(result, states=args.state or (), node=args.node)
    if args.output == "json":
        sys.stdout.write(printing.format_json(result))
    else:
        sys.stdout.write(printing.format_desired(result, recipe=recipe))
    for warning in result.warnings:
        _print_warning(_one_line(warning), sys.stderr)
    return 0


def _render_desired(
    args: argparse.Namespace, sr: srmodel.SpecialResource, recipe: recipe_.Recipe
) -> desired.DesiredState:
    """What ``sro run`` would apply for ``sr``: on the nodes of an inventory, with the built-in
    kinds and those ``--api-versions`` declares, or on the live cluster's."""
    proxy = values.ProxySettings(http=args.http_proxy, https=args.https_proxy, no_proxy=args.no_proxy)
    operator = values.OperatorInfo(namespace=args.namespace, image="", version=sro.__version__)
    policy = policy_file.load(args.recipe_policy)
    if args.live:
        return _render_live(sr, recipe, operator=operator, proxy=proxy, policy=policy, api=api_settings(args))
    declared = kinds.Declared.parse(args.api_versions or ())
    text = recipe_.read_text(args.nodes, shown=str(args.nodes))
    nodes = inventory.load(text, file=str(args.nodes))
    env = pipeline.Environment(
        cluster_version=args.cluster_version,
        operator=operator,
        proxy=proxy,
        is_namespaced=declared.is_namespaced,
        is_served=declared.is_served,
        policy=policy,
    )
    return pipeline.render_desired(sr, recipe, nodes, env=env)


def _render_live(
    sr: srmodel.SpecialResource,
    recipe: recipe_.Recipe,
    *,
    operator: values.OperatorInfo,
    proxy: values.ProxySettings,
    policy: recipe_policy.RecipePolicy,
    api: settings_.ApiSettings,
) -> desired.DesiredState:
    """Render for the nodes, version and served kinds of the cluster ``api`` names (read only)."""
    nodes, facts = asyncio.run(_read_cluster(api))
    env = pipeline.Environment(
        cluster_version=facts.version.git_version,
        operator=operator,
        proxy=proxy,
        is_namespaced=facts.is_namespaced,
        is_served=facts.is_served,
        policy=policy,
    )
    return pipeline.render_desired(sr, recipe, nodes, env=env)


async def _read_cluster(
    settings: settings_.ApiSettings,
) -> tuple[list[views.NodeView], discovery.ClusterFacts]:
    """Every Node, and the server's version and served kinds (one discovery snapshot)."""
    from sro.kube import discovery, http  # noqa: PLC0415 - only --live needs the client

    async with await http.Api.connect(settings) as api:
        facts = await discovery.read_facts(api)
        listed = await api.request("GET", "/api/v1/nodes", resource="nodes")
    nodes = sorted((views.NodeView.from_body(b) for b in listed.get("items") or ()), key=lambda n: n.name)
    return nodes, facts


# --- status, diff: read the live cluster (sro.report) -----------------------------------------


def _status(args: argparse.Namespace) -> int:
    from sro.kube import config as kubeconfig  # noqa: PLC0415 - only the live commands need the client
    from sro.report import status  # noqa: PLC0415

    settings = api_settings(args)
    kubeconfig.check(settings)  # a missing kubeconfig or context: one line and exit 2, as for run
    return asyncio.run(
        status.run(
            settings,
            name=args.name,
            output=args.output,
            watch=args.watch,
            interval=args.interval,
            out=sys.stdout,
        )
    )


def _diff(args: argparse.Namespace) -> int:
    from sro.kube import config as kubeconfig  # noqa: PLC0415
    from sro.report import diff  # noqa: PLC0415

    settings = api_settings(args)
    kubeconfig.check(settings)
    return diff.main(args, api=settings, out=sys.stdout)


def _preflight(args: argparse.Namespace) -> int:
    from sro import cli_preflight  # noqa: PLC0415 - the registry client loads only when asked for

    return cli_preflight.run(args, api=api_settings(args))


# --- run --------------------------------------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    try:
        app = importlib.import_module("sro.app")
    except ImportError as exc:
        if exc.name not in ("sro.app", "sro"):
            raise
        print("sro run: the operator runtime (sro.app) is not part of this build", file=sys.stderr)
        return 1
    settings = run_settings(args)
    from sro.kube import config as kubeconfig  # noqa: PLC0415 - lint and render never need it

    kubeconfig.check(settings.api)  # a missing kubeconfig or context: one line, before any log line
    result = app.run(settings)
    if inspect.isawaitable(result):
        with asyncio.Runner(loop_factory=_event_loop(args.event_loop)) as runner:
            result = runner.run(_await(result))
    return int(result or 0)


def _event_loop(name: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The loop ``sro run`` runs on: uvloop's unless asked for asyncio's (or uvloop is not
    installed). Its sockets and TLS are native code, where asyncio's TLS is Python: a
    large fleet's node heartbeats cost a sixth less CPU to read."""
    if name == "uvloop":
        try:
            import uvloop  # noqa: PLC0415 - only the operator's loop needs it
        except ImportError:
            return None
        return uvloop.new_event_loop
    return None


async def _await(awaitable: Any) -> Any:
    return await awaitable


def api_settings(args: argparse.Namespace) -> settings_.ApiSettings:
    """Where the API server is: ``--kubeconfig`` and ``--context`` (run, render --live);
    and for ``run``, how fast to send (``--kube-api-qps``, ``--kube-api-burst``)."""
    limits = {"qps": args.kube_api_qps, "burst": args.kube_api_burst} if args.command == "run" else {}
    return settings_.ApiSettings(kubeconfig=args.kubeconfig, context=args.context or None, **limits)


def server_settings(args: argparse.Namespace) -> settings_.ServerSettings:
    """The probe server and the metrics server; the same address twice is one server."""
    probes, metrics = args.health_probe_bind_address, args.metrics_bind_address
    host, port = probes if probes is not None else ("", None)
    if metrics is None or metrics == probes:
        return settings_.ServerSettings(address=host, port=port, metrics=metrics is not None)
    return settings_.ServerSettings(
        address=host, port=port, metrics_address=metrics[0], metrics_port=metrics[1]
    )


def run_settings(args: argparse.Namespace) -> settings_.Settings:
    """``sro.settings.Settings`` from the run flags (each already has its environment fallback)."""
    base = settings_.Settings()
    return dataclasses.replace(
        base,
        api=api_settings(args),
        server=server_settings(args),
        log=dataclasses.replace(base.log, format=args.log_format, level=args.log_level),
        queue=dataclasses.replace(base.queue, pace=args.reconcile_pace),
        controller=dataclasses.replace(
            base.controller,
            workers=args.workers,
            write_concurrency=args.write_concurrency,
            log_reads_per_second=args.log_reads_per_second,
        ),
        lease=dataclasses.replace(
            base.lease,
            enabled=args.leader_elect == "true",
            namespace=args.leader_elect_namespace or args.namespace,
        ),
        operator=settings_.OperatorSettings(
            namespace=args.namespace,
            recipe_dirs=tuple(p for p in args.recipes.split(":") if p),
            image=args.image,
            http_proxy=args.http_proxy,
            https_proxy=args.https_proxy,
            no_proxy=args.no_proxy,
            recipe_policy=args.recipe_policy,
            image_check_registries=tuple(r for r in args.image_check_registries.split(",") if r),
            image_check_missing_ttl=float(args.image_check_missing_ttl),
        ),
    )


if __name__ == "__main__":
    raise SystemExit(main())
