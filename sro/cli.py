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
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import sro
from sro import errors
from sro import settings as settings_
from sro.cli_args import build_parser
from sro.hooks import offline, pipeline
from sro.model import desired, inventory, recipe_policy, views
from sro.model import specialresource as srmodel
from sro.render import kinds, policy_file, printing, sources, values
from sro.render import recipe as recipe_

if TYPE_CHECKING:
    from sro.kube import discovery  # only --live talks to a cluster; imported there


def _one_line(text: str) -> str:
    """A problem as one line, whatever its message quotes (a value may hold line breaks)."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):  # a file name that is not UTF-8 prints escaped
            stream.reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    handler = {
        "version": _version,
        "lint": _lint,
        "render": _render,
        "run": _run,
        "preflight": _preflight,
    }[args.command]
    try:
        return handler(args)
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


def _version(args: argparse.Namespace) -> int:
    print(f"sro {sro.__version__}")
    return 0


# --- lint -------------------------------------------------------------------------------------


def _print_warning(message: str, out: TextIO) -> None:
    where, sep, rest = message.partition(": ")
    print(f"{where}: warning: {rest}" if sep else f"warning: {message}", file=out)


def _lint(args: argparse.Namespace) -> int:
    failures: list[errors.RecipeError] = []
    warnings: list[str] = []
    recipe_dirs: list[Path] = []
    srs: list[srmodel.SpecialResource] = []
    for raw in args.paths:
        path = Path(raw)
        if path.is_dir():
            recipe_dirs.append(path)
        elif path.is_file() and path.suffix not in (".yaml", ".yml", ".json"):
            warnings.append(f"{path}: neither a recipe directory nor a YAML file; skipped")
        elif path.is_file():
            found, problems = offline.read_specialresources(path)
            srs.extend(found)
            failures.extend(problems)
        else:
            why = "neither a directory nor a regular file" if path.exists() else "no such file or directory"
            failures.append(errors.RecipeError(why, location=errors.Location(file=raw)))
    policy = policy_file.load(args.recipe_policy)
    linted = {d.name for d in recipe_dirs}
    for directory in recipe_dirs:
        users = [s for s in srs if s.spec.recipe == directory.name]
        try:
            files = recipe_.files_from_directory(directory, display=str(directory))
        except errors.RecipeError as exc:
            failures.append(exc)
            continue
        _, report = offline.load_and_check(
            directory.name,
            files,
            source=recipe_.Source.DIRECTORY,
            origin=str(directory).rstrip("/"),
            srs=users,
            policy=policy,
        )
        failures.extend(report.errors)
        warnings.extend(report.warnings)
    search = sources.default_search_path()
    for sr in srs:
        if sr.spec.recipe in linted:
            continue
        try:
            path, source = search.locate(sr.spec.recipe)
        except errors.RecipeError:
            warnings.append(
                f"{sr.name}: recipe {sr.spec.recipe!r} is not built in and not linted here; "
                "only the SpecialResource was checked"
            )
            continue
        _, report = offline.load_and_check(
            path.name,
            recipe_.files_from_directory(path),
            source=source,
            origin=str(path),
            srs=[sr],
            policy=policy,
        )
        failures.extend(report.errors)
        warnings.extend(report.warnings)
    for warning in warnings:
        _print_warning(_one_line(warning), sys.stdout)
    for error in failures:
        print(_one_line(str(error)), file=sys.stdout)
    return 1 if failures else 0


# --- render -----------------------------------------------------------------------------------


def _render(args: argparse.Namespace) -> int:
    recipe = recipe_.load_directory(args.recipe, display=str(args.recipe).rstrip("/"))
    found, problems = offline.read_specialresources(args.sr)
    if problems:
        raise problems[0]
    if not found:
        raise errors.RecipeError(
            "no SpecialResource in the file", location=errors.Location(file=str(args.sr))
        )
    sr = found[0]
    proxy = values.ProxySettings(http=args.http_proxy, https=args.https_proxy, no_proxy=args.no_proxy)
    operator = values.OperatorInfo(namespace=args.namespace, image="", version=sro.__version__)
    policy = policy_file.load(args.recipe_policy)
    if args.live:
        result = _render_live(
            sr, recipe, operator=operator, proxy=proxy, policy=policy, api=api_settings(args)
        )
    else:
        text = recipe_.read_text(args.nodes, shown=str(args.nodes))
        nodes = inventory.load(text, file=str(args.nodes))
        env = pipeline.Environment(
            cluster_version=args.cluster_version,
            operator=operator,
            proxy=proxy,
            is_namespaced=kinds.builtin_is_namespaced,
            is_served=kinds.builtin_is_served,
            policy=policy,
        )
        result = pipeline.render_desired(sr, recipe, nodes, env=env)
    sys.stdout.write(printing.format_desired(result, recipe=recipe))
    for warning in result.warnings:
        _print_warning(_one_line(warning), sys.stderr)
    return 0


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
        result = asyncio.run(_await(result))
    return int(result or 0)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def api_settings(args: argparse.Namespace) -> settings_.ApiSettings:
    """Where the API server is: ``--kubeconfig`` and ``--context`` (run, render --live)."""
    return settings_.ApiSettings(kubeconfig=args.kubeconfig, context=args.context or None)


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
        controller=dataclasses.replace(
            base.controller, workers=args.workers, write_concurrency=args.write_concurrency
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
        ),
    )


if __name__ == "__main__":
    raise SystemExit(main())
