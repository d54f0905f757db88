"""``sro diff --sr FILE|NAME``: what ``sro run`` would change on the live cluster, before it does.

An administrator editing a SpecialResource, or moving to a new recipe, wants to see the
writes first, as ``kubectl diff`` shows them for a manifest. This renders with the code
``run`` uses (``hooks.pipeline.render_desired`` over the live nodes, version and served
kinds, as ``sro render --live`` does), adds what the engine adds (the owner label and
reference, ``engine.sent.owned_body``), and asks the same question ``run`` asks
(``apply.diff.needs_apply``). Where the answer is yes, the API server's own answer to a
server-side-apply dry run is compared with the live object, so defaults and merges are
the server's, not a guess. Objects the SpecialResource owns that it no longer renders
are shown as deletions. An absent object is shown only where its state is open (the
nodes carry the labels of the states it comes after), as ``run`` creates it only then.
Node labels and pod restarts depend on what runs on the nodes and are not shown (``sro
status`` shows them).

Nothing is written: every request is a read or a dry run. Exit status as ``kubectl diff``:
0 nothing would change, 1 something would, 2 the diff could not be made.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import difflib
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

import sro
from sro import app, errors
from sro import settings as settings_
from sro.apply import diff as apply_diff
from sro.apply import ssa
from sro.cache import projections
from sro.engine import recipes
from sro.engine import sent as sent_
from sro.hooks import builds, offline, pipeline
from sro.kube import discovery, http
from sro.model import desired, views
from sro.model import specialresource as srmodel
from sro.observe import logs
from sro.plan import lifecycle
from sro.render import policy_file, sources, values
from sro.render import recipe as recipe_
from sro.report import status

CONCURRENCY = 16
"""Reads (and dry runs) in flight at once: a thousand per-node pods take seconds, not minutes,
and the API server sees no more than a client-go default QPS burst."""
_SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")


@dataclass(frozen=True, kw_only=True)
class Change:
    """One object ``run`` would create, change or delete: its text before and after."""

    ref: desired.ObjectRef
    before: str
    after: str

    def unified(self) -> str:
        name = f"{self.ref.api_version}/{self.ref.kind}/{self.ref.namespace or '-'}/{self.ref.name}"
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            fromfile=f"live/{name}",
            tofile=f"sro/{name}",
        )
        return "".join(lines)


def comparable(body: Mapping[str, Any] | None) -> str:
    """An object as YAML without what only the server sets (identity, versions, managed
    fields, status), so two answers differ only where a write would change something."""
    if body is None:
        return ""
    meta = {k: v for k, v in (body.get("metadata") or {}).items() if k not in _SERVER_FIELDS}
    trimmed = {k: v for k, v in body.items() if k != "status"}
    trimmed["metadata"] = meta
    return yaml.safe_dump(trimmed, sort_keys=True, default_flow_style=False, width=100)


def read_file(given: str) -> srmodel.SpecialResource | None:
    """The SpecialResource in file ``given``, or None when ``given`` is no file (a name)."""
    path = Path(given)
    if path.suffix not in (".yaml", ".yml", ".json") and not path.is_file():
        return None
    found, problems = offline.read_specialresources(path)
    if problems:
        raise problems[0]
    if not found:
        raise errors.RecipeError("no SpecialResource in the file", location=errors.Location(file=given))
    return found[0]


async def _read_sr(
    api: http.Api, given: str, *, from_file: srmodel.SpecialResource | None
) -> srmodel.SpecialResource:
    """The SpecialResource of a file, with the uid of its live copy if one of that name
    exists (the owner references need it), or the live one named ``given``."""
    name = from_file.name if from_file is not None else given
    try:
        live = await api.request("GET", f"{status.SR_PATH}/{name}", resource=srmodel.PLURAL)
    except errors.NotFound:
        if from_file is not None:
            return from_file
        raise errors.SroError(f"no SpecialResource {given!r} (and no such file)") from None
    if from_file is None:
        return srmodel.parse(live)
    return dataclasses.replace(from_file, uid=str((live.get("metadata") or {}).get("uid", "")))


async def _recipe(
    api: http.Api, sr: srmodel.SpecialResource, *, directory: Path | None, namespace: str
) -> recipe_.Recipe:
    """``--recipe DIR``, or what ``run`` picks: a ConfigMap recipe in the operator's
    namespace, else a built-in one (``engine.recipes.Catalog``, the operator's own order)."""
    if directory is not None:
        return recipe_.load_directory(directory, display=str(directory).rstrip("/"))
    listed = await status.list_all(
        api,
        f"/api/v1/namespaces/{namespace}/configmaps",
        params={"labelSelector": f"{sources.RECIPE_LABEL}={sr.spec.recipe}"},
        resource="configmaps",
    )
    found = [projections.ObjectView.from_body({"apiVersion": "v1", "kind": "ConfigMap", **b}) for b in listed]
    catalog = recipes.Catalog(
        sources.Library(sources.default_search_path()), configmaps=lambda: found, namespace=namespace
    )
    return catalog.get(sr.spec.recipe)


async def _owned(
    api: http.Api, known: discovery.Discovery, sr: srmodel.SpecialResource, kinds: Sequence[tuple[str, str]]
) -> dict[desired.ObjectRef, dict[str, Any]]:
    """Every live object of ``kinds`` labelled as the SpecialResource's and owned by its uid."""
    out: dict[desired.ObjectRef, dict[str, Any]] = {}
    for api_version, kind in sorted(set(kinds)):
        if kind == "Namespace" or not await known.is_served(api_version, kind):
            continue  # the operand namespace is kept while the SpecialResource lives
        resource = await known.resource(api_version, kind)
        items = await status.list_all(
            api,
            resource.path(),
            params={"labelSelector": f"{srmodel.OWNER_LABEL}={sr.name}"},
            resource=resource.plural,
        )
        for item in items:
            refs = (item.get("metadata") or {}).get("ownerReferences") or ()
            if sr.uid and any(r.get("uid") == sr.uid for r in refs):
                body = {"apiVersion": api_version, "kind": kind, **item}
                out[desired.ObjectRef.of(body)] = body
    return out


async def changes(
    settings: settings_.ApiSettings,
    *,
    given: str,
    from_file: srmodel.SpecialResource | None,
    directory: Path | None,
    namespace: str,
    proxy: values.ProxySettings,
    policy_path: str,
) -> list[Change]:
    """Every change ``run`` would make to the SpecialResource's objects, in apply order."""
    async with await http.Api.connect(settings) as api:
        sr = await _read_sr(api, given, from_file=from_file)
        recipe = await _recipe(api, sr, directory=directory, namespace=namespace)
        facts = await discovery.read_facts(api)
        listed = await status.list_all(api, "/api/v1/nodes", params={}, resource="nodes")
        nodes = sorted((views.NodeView.from_body(b) for b in listed), key=lambda n: n.name)
        del listed
        env = pipeline.Environment(
            cluster_version=facts.version.git_version,
            operator=values.OperatorInfo(namespace=namespace, image="", version=sro.__version__),
            proxy=proxy,
            is_namespaced=facts.is_namespaced,
            is_served=facts.is_served,
            policy=policy_file.load(policy_path),
        )
        wanted = builds.without_builds(pipeline.render_desired(sr, recipe, nodes, env=env))
        known = discovery.Discovery(api)
        await known.read()
        reader = ssa.Writer(api=api, discovery=known)
        out: list[Change] = []
        if sr.spec.namespace and not await _exists(reader, _namespace(sr)):
            out.append(Change(ref=_namespace(sr), before="", after=comparable(_namespace_body(sr))))
        is_open = opening(wanted, nodes)
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(obj: desired.DesiredObject) -> list[Change]:
            async with gate:
                return await _change(reader, obj, sr, create=is_open(obj))

        found = await asyncio.gather(*(one(obj) for obj in wanted.objects))  # in wanted's order
        out.extend(change for changes in found for change in changes)
        kinds = [*app.OWNED_KINDS, *((o.ref.api_version, o.ref.kind) for o in wanted.objects)]
        live = await _owned(api, known, sr, kinds)
        rendered = {obj.ref for obj in wanted.objects}
        out += [
            Change(ref=r, before=comparable(b), after="")
            for r, b in sorted(live.items())
            if r not in rendered
        ]
        return out


def _namespace(sr: srmodel.SpecialResource) -> desired.ObjectRef:
    return desired.ObjectRef(api_version="v1", kind="Namespace", namespace="", name=sr.spec.namespace)


def _namespace_body(sr: srmodel.SpecialResource) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": sr.spec.namespace, "labels": {srmodel.OWNER_LABEL: sr.name}},
    }


async def _exists(reader: ssa.Writer, ref: desired.ObjectRef) -> bool:
    try:
        await reader.get(ref)
    except errors.NotFound:
        return False
    return True


def projected(live: Any, want: Any) -> Any:
    """``live`` cut to the fields ``want`` has (lists of equal length item by item): the
    live object as the desired one is written, so a diff of the two shows only what sro
    sets, not the server's defaults."""
    if isinstance(want, Mapping) and isinstance(live, Mapping):
        return {k: projected(live[k], v) for k, v in want.items() if k in live}
    if isinstance(want, list) and isinstance(live, list) and len(want) == len(live):
        return [projected(lv, wv) for lv, wv in zip(live, want, strict=True)]
    return live


def opening(
    wanted: desired.DesiredState, nodes: Sequence[views.NodeView]
) -> Callable[[desired.DesiredObject], bool]:
    """Whether ``run`` would create an absent object now: its state is open on its node (a
    per-node object) or on some selected node (any other), that is, the node carries the
    ready labels of every state it comes after. (The planner walks the live objects too;
    the labels are where that walk has got to, and what a pinned pod needs anyway.)"""
    after = {state.name: state.after for state in wanted.states}
    labels = {n.name: n.labels for n in nodes}

    def open_on(node: str, state: str) -> bool:
        on = labels.get(node, {})
        return all(
            on.get(lifecycle.state_label(wanted.sr_name, s)) == lifecycle.READY_VALUE for s in after[state]
        )

    opened = {state: any(open_on(n, state) for n in wanted.nodes) for state in after}
    return lambda obj: open_on(obj.node, obj.state) if obj.node is not None else opened.get(obj.state, False)


async def _change(
    reader: ssa.Writer, obj: desired.DesiredObject, sr: srmodel.SpecialResource, *, create: bool
) -> list[Change]:
    body = apply_diff.stamped(sent_.owned_body(obj.body, sr) if sr.uid else dict(obj.body))
    try:
        live: dict[str, Any] | None = await reader.get(obj.ref)
    except errors.NotFound:
        live = None
    if live is None:
        return [Change(ref=obj.ref, before="", after=comparable(body))] if create else []
    if not apply_diff.needs_apply(body, live):
        return []
    try:
        if not sr.uid:  # not in the cluster: its objects' owner references cannot be checked
            raise errors.SroError("no dry run without the SpecialResource's uid")
        after = await reader.apply(body, dry_run=True)
        before_text, after_text = comparable(live), comparable(after)
    except errors.SroError as exc:
        # Refused (a Pod changes only by being replaced; an invalid object; no uid): the
        # fields sro writes, live and desired.
        if not isinstance(exc, errors.NotFound) and sr.uid:
            why = " ".join(str(exc).split())[:300]
            print(
                f"sro diff: {obj.ref}: the API server refuses this change, so would run: {why}",
                file=sys.stderr,
            )
        before_text, after_text = comparable(projected(live, body)), comparable(body)
    return [] if before_text == after_text else [Change(ref=obj.ref, before=before_text, after=after_text)]


def main(args: argparse.Namespace, *, api: settings_.ApiSettings, out: TextIO) -> int:
    """Print the unified diff of every change; 0 none, 1 some, 2 could not tell."""
    proxy = values.ProxySettings(http=args.http_proxy, https=args.https_proxy, no_proxy=args.no_proxy)
    logs.configure(format="console", level="warning")  # the diff is the output, not the requests
    try:
        found = asyncio.run(
            changes(
                api,
                given=args.sr,
                from_file=read_file(args.sr),
                directory=args.recipe,
                namespace=args.namespace,
                proxy=proxy,
                policy_path=args.recipe_policy,
            )
        )
    except errors.SroError as exc:
        print(f"sro diff: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    for change in found:
        out.write(change.unified())
    return 1 if found else 0
