"""``sro preflight``: before a cluster moves to a kernel, does every image it will need exist?

A kernel-affine recipe names its driver image by kernel; the day nodes boot a kernel
nobody built for, their drivers cannot start. Preflight answers ahead of the upgrade:
for each SpecialResource it renders the kernel-affine documents for a node group on
that kernel (the very pipeline ``sro run`` applies, as ``sro render`` does), collects the
container images of those documents, and asks their registries (``sro.images``). Offline,
SpecialResources come from files and recipes from directories (or the built-in ones);
``--live`` reads the cluster's SpecialResources, its drop-in recipe ConfigMaps, its
served kinds, the operating systems of the nodes each SpecialResource selects, and the
pull secrets of each operand's service account.

Exit status: 0 when every image exists, 1 when any does not (missing, refused or its
registry unreachable: each says which), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import yaml

import sro
from sro import errors
from sro import settings as settings_
from sro.hooks import builds, offline, pipeline
from sro.images import answers, credentials, needs, secrets
from sro.images import client as client_
from sro.model import desired, kernels, selection, views
from sro.model import specialresource as srmodel
from sro.render import kinds, policy_file, sources, values
from sro.render import recipe as recipe_

if TYPE_CHECKING:
    from sro.kube import http

USAGE = 2
CONFIGMAP_LABEL = "sro.dev/recipe"


@dataclass(frozen=True, kw_only=True)
class Row:
    need: needs.Need
    answer: answers.Answer


def parse_os(text: str) -> desired.OsRelease:
    os_id, sep, version = text.partition(":")
    if not sep or not os_id or not version:
        raise ValueError(f"--os {text!r}: expected ID:VERSION_ID, e.g. rhel:9.4 or ubuntu:22.04")
    return desired.OsRelease(id=os_id, version_id=version)


synthetic_node = needs.synthetic_node


def needs_for(
    sr: srmodel.SpecialResource,
    recipe: recipe_.Recipe,
    *,
    kernel: str,
    oses: Sequence[desired.OsRelease],
    arch: str,
    env: pipeline.Environment,
) -> tuple[list[needs.Need], tuple[str, ...]]:
    """What ``sr`` needs on ``kernel`` for each OS (each image once), and the render's warnings."""
    selector = selection.effective_selector(sr, recipe_default=recipe.node_selector)
    nodes = [synthetic_node(kernel=kernel, os=os, selector=selector, arch=arch) for os in oses]
    state = pipeline.render_desired(sr, recipe, nodes, env=env)
    unique: dict[tuple[str, str], needs.Need] = {}
    for need in needs.kernel_images(builds.without_builds(state)):  # a builder gates nothing
        unique.setdefault((need.state, need.image), need)
    return list(unique.values()), state.warnings


# --- output -------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return " ".join(text.split()) or "-"


def format_table(rows: Sequence[Row]) -> str:
    header = ("SR", "STATE", "IMAGE", "RESULT", "DIGEST")
    lines = [
        (
            r.need.sr,
            r.need.state,
            r.need.image,
            str(r.answer.outcome) if r.answer.exists else f"{r.answer.outcome}: {r.answer.detail}",
            r.answer.digest,
        )
        for r in rows
    ]
    cells = [header, *((_cell(c) for c in line) for line in lines)]
    table = [tuple(row) for row in cells]
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    out = []
    for row in table:
        out.append("  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]).rstrip())
    return "\n".join(out) + "\n"


def format_json(rows: Sequence[Row], *, kernel: str) -> str:
    document = {
        "kernel": kernel,
        "ready": all(r.answer.exists for r in rows),
        "images": [
            {
                "specialResource": r.need.sr,
                "state": r.need.state,
                "image": r.need.image,
                "result": str(r.answer.outcome),
                "digest": r.answer.digest,
                "detail": r.answer.detail,
            }
            for r in rows
        ],
    }
    return json.dumps(document, indent=2) + "\n"


# --- reading what to check ----------------------------------------------------------------------


def read_pull_secrets(paths: Sequence[Path]) -> list[credentials.PullSecret]:
    """``--pull-secret`` files: a Secret (YAML or JSON) or a Docker ``config.json``."""
    found: list[credentials.PullSecret] = []
    for path in paths:
        text = recipe_.read_text(path, shown=str(path))
        for document in yaml.safe_load_all(text):
            if isinstance(document, Mapping) and document.get("kind") == "Secret":
                found.append(credentials.PullSecret.from_body(document))
            elif isinstance(document, Mapping) and "auths" in document:
                encoded = base64.b64encode(json.dumps(document).encode()).decode()
                found.append(
                    credentials.PullSecret(name=str(path), data={credentials.DOCKERCONFIGJSON: encoded})
                )
            elif document is not None:
                raise errors.SroError(f"{path}: neither a Secret nor a Docker config.json")
    return found


def _offline_srs(args: argparse.Namespace) -> list[srmodel.SpecialResource]:
    found: list[srmodel.SpecialResource] = []
    for path in args.sr:
        srs, problems = offline.read_specialresources(path)
        if problems:
            raise problems[0]
        found.extend(srs)
    if not args.sr:  # each recipe directory on its own, with its defaults
        found.extend(offline.synthetic_sr(Path(d).name) for d in args.recipe)
    return found


def _load_recipe(
    name: str, args: argparse.Namespace, dropins: Mapping[str, recipe_.Recipe]
) -> recipe_.Recipe:
    if name in dropins:
        return dropins[name]
    for directory in args.recipe:
        if Path(directory).name == name:
            return recipe_.load_directory(Path(directory), display=str(directory).rstrip("/"))
    path, source = sources.default_search_path().locate(name)
    return recipe_.load_directory(path, display=str(path), source=source)


async def _read_live(
    api: http.Api, *, namespace: str, names: Sequence[str]
) -> tuple[list[srmodel.SpecialResource], dict[str, recipe_.Recipe], list[views.NodeView], Any]:
    from sro.kube import discovery  # noqa: PLC0415 - only --live talks to a cluster

    facts = await discovery.read_facts(api)
    listed = await api.request(
        "GET", f"/apis/{srmodel.API_VERSION}/specialresources", resource="specialresources"
    )
    srs = [srmodel.parse(b) for b in listed.get("items") or ()]
    if names:
        unknown = sorted(set(names) - {s.name for s in srs})
        if unknown:
            raise errors.SroError(f"no SpecialResource named {', '.join(unknown)} in the cluster")
        srs = [s for s in srs if s.name in names]
    maps = await api.request(
        "GET",
        f"/api/v1/namespaces/{namespace}/configmaps",
        params={"labelSelector": CONFIGMAP_LABEL},
        resource="configmaps",
    )
    dropins: dict[str, recipe_.Recipe] = {}
    for cm in maps.get("items") or ():
        meta = cm.get("metadata") or {}
        name = str((meta.get("labels") or {}).get(CONFIGMAP_LABEL, ""))
        dropins[name] = sources.configmap_recipe(
            name, cm.get("data") or {}, namespace=namespace, configmap=str(meta.get("name", ""))
        )
    nodes = await api.request("GET", "/api/v1/nodes", resource="nodes")
    return srs, dropins, [views.NodeView.from_body(b) for b in nodes.get("items") or ()], facts


# --- the command --------------------------------------------------------------------------------


async def _check(args: argparse.Namespace, out: TextIO, *, api_settings: settings_.ApiSettings) -> int:
    oses = [parse_os(text) for text in args.os]
    proxy = values.ProxySettings(http=args.http_proxy, https=args.https_proxy, no_proxy=args.no_proxy)
    operator = values.OperatorInfo(namespace=args.namespace, image="", version=sro.__version__)
    policy = policy_file.load(args.recipe_policy)
    offline_secrets = read_pull_secrets(args.pull_secret)
    api: http.Api | None = None
    if args.live:
        from sro.kube import http  # noqa: PLC0415 - only --live talks to a cluster

        api = await http.Api.connect(api_settings)
    try:
        if api is not None:
            srs, dropins, cluster_nodes, facts = await _read_live(
                api, namespace=args.namespace, names=args.names
            )
            env = pipeline.Environment(
                cluster_version=facts.version.git_version, operator=operator, proxy=proxy,
                is_namespaced=facts.is_namespaced, is_served=facts.is_served, policy=policy,
            )  # fmt: skip
        else:
            srs, dropins, cluster_nodes = _offline_srs(args), {}, []
            env = pipeline.Environment(
                cluster_version=args.cluster_version, operator=operator, proxy=proxy,
                is_namespaced=kinds.builtin_is_namespaced, is_served=kinds.builtin_is_served, policy=policy,
            )  # fmt: skip
        wanted: list[needs.Need] = []
        for sr in srs:
            recipe = _load_recipe(sr.spec.recipe, args, dropins)
            groups = oses or _node_oses(sr, recipe, cluster_nodes)
            if not groups:
                print(f"sro preflight: {sr.name}: selects no node; give --os", file=sys.stderr)
                continue
            found, warnings = needs_for(sr, recipe, kernel=args.kernel, oses=groups, arch=args.arch, env=env)
            wanted.extend(found)
            for warning in warnings:
                print(f"sro preflight: warning: {' '.join(warning.split())}", file=sys.stderr)
        settings = client_.Settings(
            proxy=proxy, plain_http=frozenset(args.insecure_registry), request_timeout=args.timeout
        )
        async with client_.Resolver(settings) as resolver:
            reader = secrets.Cached(api) if api is not None else None
            rows = await asyncio.gather(*(_ask(resolver, n, reader, offline_secrets) for n in wanted))
    finally:
        if api is not None:
            await api.close()
    out.write(format_json(rows, kernel=args.kernel) if args.output == "json" else format_table(rows))
    return 0 if all(r.answer.exists for r in rows) else 1


def _node_oses(
    sr: srmodel.SpecialResource, recipe: recipe_.Recipe, nodes: Sequence[views.NodeView]
) -> list[desired.OsRelease]:
    """The OS releases among the nodes ``sr`` selects (each gets the new kernel)."""
    selector = selection.effective_selector(sr, recipe_default=recipe.node_selector)
    return sorted({kernels.node_os(n) for n in selection.select(nodes, selector)})


async def _ask(
    resolver: client_.Resolver,
    need: needs.Need,
    reader: secrets.Cached | None,
    offline_secrets: Sequence[credentials.PullSecret],
) -> Row:
    found = list(offline_secrets)
    if reader is not None:
        read, _ = await reader.read(namespace=need.namespace, pod_spec=need.pod_spec)
        found = read + found
    return Row(need=need, answer=await resolver.resolve(need.image, secrets=found))


def run(args: argparse.Namespace, *, api: settings_.ApiSettings) -> int:
    """``sro preflight``: print the table (or JSON) and return the exit status."""
    if not args.live and not args.os:
        print(
            "sro preflight: --os ID:VERSION_ID is needed offline (live, the nodes' own are used)",
            file=sys.stderr,
        )
        return USAGE
    if not args.live and not (args.sr or args.recipe):
        print("sro preflight: give --sr FILE or --recipe DIR (or --live)", file=sys.stderr)
        return USAGE
    if args.live and args.sr:
        print("sro preflight: --sr is for offline checks; --live reads the cluster's", file=sys.stderr)
        return USAGE
    try:
        [parse_os(text) for text in args.os]
    except ValueError as exc:
        print(f"sro preflight: {exc}", file=sys.stderr)
        return USAGE
    return asyncio.run(_check(args, sys.stdout, api_settings=api))
