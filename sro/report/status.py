"""``sro status [NAME]`` (also ``kubectl sro status``): every node of a SpecialResource, state by state.

It reads, never writes: the SpecialResource (its status) and the Nodes' metadata. Nodes
are listed in pages of ``PAGE_SIZE``, as metadata only (``PartialObjectMetadataList``, so
a node's status and images never cross the wire), and narrowed on the server by the
SpecialResource's own ``spec.nodeSelector`` when it has one; the rows come from the labels
and the annotation sro writes (``sro.report.table``). That keeps a thousand-node cluster
to a few requests and well under two seconds (``hack/bench status``).

``--watch`` reads again every ``interval`` seconds and prints the report again only when
it changed, so a terminal shows each step and nothing twice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from sro import errors
from sro import settings as settings_
from sro.kube import http
from sro.model import specialresource as srmodel
from sro.report import table

PAGE_SIZE = 500
"""Nodes per list page: what client-go's pager asks for, so no single answer grows with
the cluster."""
SR_PATH = f"/apis/{srmodel.API_VERSION}/{srmodel.PLURAL}"


async def list_all(
    api: http.Api, path: str, *, params: Mapping[str, str], resource: str, accept: str = http.JSON
) -> list[dict[str, Any]]:
    """Every item of a list, read in pages of ``PAGE_SIZE``."""
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        query = {**params, "limit": str(PAGE_SIZE)}
        if token:
            query["continue"] = token
        page = await api.request("GET", path, params=query, resource=resource, accept=accept)
        items.extend(page.get("items") or ())
        token = str((page.get("metadata") or {}).get("continue", "") or "")
        if not token:
            return items


def node_selector(srs: Sequence[Mapping[str, Any]]) -> str:
    """A label selector every node of ``srs`` matches, or "" (every node): the one
    SpecialResource's ``spec.nodeSelector``. Several, or a recipe's default selector (which
    only the recipe knows), are read from all nodes and filtered by sro's own marks."""
    if len(srs) != 1:
        return ""
    selector = (srs[0].get("spec") or {}).get("nodeSelector") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


async def read(api: http.Api, *, name: str | None) -> list[table.Report]:
    """The report of SpecialResource ``name``, or of every SpecialResource by name."""
    if name:
        try:
            srs = [await api.request("GET", f"{SR_PATH}/{name}", resource=srmodel.PLURAL)]
        except errors.NotFound:
            raise errors.SroError(f"no SpecialResource {name!r}") from None
    else:
        srs = await list_all(api, SR_PATH, params={}, resource=srmodel.PLURAL)
        if not srs:
            return []
    selector = node_selector(srs)
    bodies = await list_all(
        api,
        "/api/v1/nodes",
        params={"labelSelector": selector} if selector else {},
        resource="nodes",
        accept=http.METADATA_LIST,
    )
    nodes = [table.NodeMeta.from_body(b) for b in bodies]
    del bodies
    ordered = sorted(srs, key=lambda sr: str((sr.get("metadata") or {}).get("name", "")))
    return [table.build(sr, nodes, selected=bool(selector)) for sr in ordered]


def _render(reports: Sequence[table.Report], *, name: str | None, output: table.Output) -> str:
    if not reports and output != "json":
        return "no SpecialResources\n"
    return table.format_reports(reports, output=output, single=name is not None)


async def run(
    settings: settings_.ApiSettings,
    *,
    name: str | None,
    output: table.Output,
    watch: bool,
    interval: float,
    out: TextIO,
) -> int:
    """Print the report (once, or again on every change while ``watch``); exit status 0."""
    async with await http.Api.connect(settings) as api:
        last = ""
        while True:
            started = time.monotonic()
            text = _render(await read(api, name=name), name=name, output=output)
            if text != last:
                if watch and output != "json":
                    out.write(f"--- {datetime.now(UTC).strftime('%H:%M:%S')}\n")
                out.write(text)
                out.flush()
                last = text
            if not watch:
                return 0
            await asyncio.sleep(max(0.0, interval - (time.monotonic() - started)))
