"""How ``sro diff`` shows one object (sro.report.diff): what the server alone sets is left
out, and a live object is cut to the fields sro writes when there is no dry-run answer.
The requests themselves are tests/e2e/test_status_and_diff.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from sro.hooks import pipeline
from sro.model import desired, inventory
from sro.model import specialresource as srmodel
from sro.render import kinds, values
from sro.render import recipe as recipe_
from sro.report import diff

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]


def test_server_fields_and_status_are_not_compared() -> None:
    live = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "a",
            "uid": "u",
            "resourceVersion": "7",
            "managedFields": [{}],
            "labels": {"x": "1"},
        },
        "data": {"k": "v"},
        "status": {"anything": True},
    }
    assert diff.comparable(live) == (
        "apiVersion: v1\ndata:\n  k: v\nkind: ConfigMap\nmetadata:\n  labels:\n    x: '1'\n  name: a\n"
    )
    assert diff.comparable(None) == ""


def test_a_live_object_is_cut_to_the_fields_sro_writes() -> None:
    want = {"spec": {"containers": [{"name": "c", "args": ["new"]}], "nodeName": "n"}}
    live = {
        "spec": {
            "containers": [{"name": "c", "args": ["old"], "imagePullPolicy": "Always"}],
            "nodeName": "n",
            "dnsPolicy": "ClusterFirst",
        },
        "status": {"phase": "Running"},
    }
    assert diff.projected(live, want) == {
        "spec": {"containers": [{"name": "c", "args": ["old"]}], "nodeName": "n"}
    }
    # A list of another length is kept whole: the diff then shows every item.
    assert diff.projected({"a": [1, 2]}, {"a": [1]}) == {"a": [1, 2]}


def test_a_change_is_a_unified_diff_named_live_and_sro() -> None:
    ref = desired.ObjectRef(api_version="apps/v1", kind="DaemonSet", namespace="ns", name="d")
    text = diff.Change(ref=ref, before="a: 1\nb: 2\n", after="a: 1\nb: 3\n").unified()
    assert text.splitlines()[:2] == ["--- live/apps/v1/DaemonSet/ns/d", "+++ sro/apps/v1/DaemonSet/ns/d"]
    assert "-b: 2" in text and "+b: 3" in text
    created = diff.Change(ref=ref, before="", after="a: 1\n").unified()
    assert created.splitlines()[-1] == "+a: 1"


def test_an_absent_object_counts_only_where_its_state_is_open() -> None:
    recipe = recipe_.load_directory(REPO / "assets" / "simple-kmod")
    sr = srmodel.parse(
        {
            "apiVersion": "sro.dev/v1alpha1",
            "kind": "SpecialResource",
            "metadata": {"name": "kmod", "uid": "u"},
        }
    )
    inventory_text = (
        "pools:\n"
        "- {name: done, count: 1, kernel: 5.14.0-427.13.1.el9_4.x86_64, os: {id: rhel, versionId: '9.4'},"
        " labels: {kmod.sro.dev/state-driver: ready}}\n"
        "- {name: new, count: 1, kernel: 5.14.0-427.13.1.el9_4.x86_64, os: {id: rhel, versionId: '9.4'}}\n"
    )
    nodes = inventory.load(inventory_text, file="inline")
    env = pipeline.Environment(
        cluster_version="1.36",
        operator=values.OperatorInfo(namespace="sro-system", image="", version="0"),
        proxy=values.ProxySettings(),
        is_namespaced=kinds.builtin_is_namespaced,
        is_served=kinds.builtin_is_served,
    )
    wanted = pipeline.render_desired(sr, recipe, nodes, env=env)
    is_open = diff.opening(wanted, nodes)
    opened = {(o.state, o.node) for o in wanted.objects if is_open(o)}
    # The first state opens everywhere; validation pods only where the driver is ready.
    assert ("state-driver", None) in opened
    assert ("state-driver-validation", "done-0") in opened
    assert ("state-driver-validation", "new-0") not in opened
