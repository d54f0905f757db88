"""``sro render`` prints what ``sro run`` applies.

Covers acceptance test 11: the same recipe, SpecialResource and nodes (the live Nodes,
saved with kubectl) rendered offline give exactly the objects the operator made, object by
object, the SpecialResource's own PriorityClasses included; each rendered field is present
with the same value in the live object (fields the server or the operator's bookkeeping
adds are ignored: status, uid, owner references, resource versions, defaults).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import specialresources as srs
import yaml
from conftest import Made, unique
from operator_process import REPO, SRO

pytestmark = pytest.mark.e2e


def _contains(live: Any, want: Any, path: str = "") -> list[str]:
    """Where ``want`` is not contained in ``live`` (maps as subsets, lists element by element)."""
    if isinstance(want, dict):
        if not isinstance(live, dict):
            return [path]
        return [p for k, v in want.items() for p in _contains(live.get(k), v, f"{path}.{k}")]
    if isinstance(want, list):
        if not isinstance(live, list) or len(live) != len(want):
            return [path]
        pairs = enumerate(zip(live, want, strict=True))
        return [p for i, (lv, wv) in pairs for p in _contains(lv, wv, f"{path}[{i}]")]
    return [] if live == want or str(live) == str(want) else [f"{path}: {live!r} != {want!r}"]


def _render(recipe: Path, sr_file: Path, nodes_file: Path) -> list[dict[str, Any]]:
    out = subprocess.run(
        [str(SRO), "render", "--recipe", str(recipe), "--sr", str(sr_file), "--nodes", str(nodes_file)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


async def test_sro_render_of_the_same_inputs_equals_what_the_reconcile_applied(
    made: Made, tmp_path: Path
) -> None:
    group, _ = made.group(
        "rnd",
        [
            {"count": 2, "kernel": "5.14.0-427.13.1.el9_4.x86_64", "os": {"id": "rhel", "versionId": "9.4"}},
            {"count": 2, "kernel": "5.15.0-105-generic", "os": {"id": "ubuntu", "versionId": "22.04"}},
        ],
    )
    sr_name = unique("rnd")
    priority = {"name": f"{sr_name}-high", "value": 1000, "description": "rendered and applied alike"}
    body = srs.manifest(
        sr_name,
        recipe="simple-kmod",
        node_selector={srs.GROUP_LABEL: group},
        extra_spec={"priorityClasses": [priority]},
    )
    name = made.sr(body)
    await srs.wait_ready(made.cluster, name, within=180)

    nodes_file = tmp_path / "nodes.yaml"
    nodes_file.write_text(
        made.cluster.kubectl("get", "nodes", "-l", f"{srs.GROUP_LABEL}={group}", "-o", "yaml").stdout
    )
    sr_file = tmp_path / "sr.yaml"
    sr_file.write_text(yaml.safe_dump(body))
    rendered = _render(REPO / "assets" / "simple-kmod", sr_file, nodes_file)
    assert rendered

    kinds = {"ServiceAccount": "serviceaccounts", "DaemonSet": "daemonsets", "Pod": "pods"}
    live = {
        (o["kind"], o["metadata"]["name"]): o
        for resource in kinds.values()
        for o in (
            dict(x, kind=k)
            for k, r in kinds.items()
            if r == resource
            for x in srs.owned(made.cluster, resource, name, namespace=name)
        )
    }
    live.update(
        (("PriorityClass", o["metadata"]["name"]), dict(o, kind="PriorityClass"))
        for o in srs.owned(made.cluster, "priorityclasses", name)
    )
    assert ("PriorityClass", priority["name"]) in live
    live = {  # a DaemonSet's pods are the DaemonSet's, not the operator's
        key: o
        for key, o in live.items()
        if not any(r.get("kind") == "DaemonSet" for r in o["metadata"].get("ownerReferences") or ())
    }
    assert {(d["kind"], d["metadata"]["name"]) for d in rendered} == set(live)
    for doc in rendered:
        found = live[(doc["kind"], doc["metadata"]["name"])]
        assert _contains(found, doc) == [], json.dumps(doc)[:300]
