"""``sro status`` rows and text from node metadata and a status (sro.report.table).

Covers which nodes are shown (walked by sro, or named failing), each cell (ready from the
label, failed from ``failingNodes``, pending otherwise), the kernel group from the
annotation, the upgrade column only when a node carries the label, the reason of a node
that waits, the summary, and the wide and JSON forms. Reading the cluster is
tests/integration/test_status_command.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sro.report import table

pytestmark = pytest.mark.unit

STATES = ("state-driver", "state-validation")


def _sr(**status: Any) -> dict[str, Any]:
    rows = status.pop("rows", None) or [
        {
            "name": s,
            "phase": "Progressing",
            "nodes": {"complete": 0, "total": 0},
            "message": "",
            "failingNodes": [],
        }
        for s in STATES
    ]
    return {
        "metadata": {"name": "gpu", "generation": status.pop("generation", 1)},
        "status": {
            "observedGeneration": 1,
            "phase": "Degraded",
            "state": "Degraded: StateFailed on 1 node (b: Error (exit code 1))",
            "nodes": {"selected": 3, "complete": 1},
            "kernels": [{"kernel": "5.14", "os": "rhel9.4", "nodes": 3}],
            "states": rows,
            **status,
        },
    }


def _node(name: str, *, kernel: str = "5.14|rhel9.4", **labels: str) -> table.NodeMeta:
    return table.NodeMeta(
        name=name,
        labels={f"gpu.sro.dev/{k}": v for k, v in labels.items()} | {"kubernetes.io/os": "linux"},
        annotations={"sro.dev/kernel.gpu": kernel} if kernel else {},
    )


def _rows() -> list[dict[str, Any]]:
    return [
        {
            "name": "state-driver",
            "phase": "Complete",
            "nodes": {"complete": 3, "total": 3},
            "message": "",
            "failingNodes": [],
        },
        {
            "name": "state-validation",
            "phase": "Failed",
            "nodes": {"complete": 1, "total": 3},
            "message": "failed on 1 node",
            "failingNodes": [{"node": "b", "reason": "Error (exit code 1)"}],
        },
    ]


def test_each_walked_node_gets_a_row_with_a_cell_per_state() -> None:
    nodes = [
        _node("c", **{"state-driver": "ready"}),
        _node("a", **{"state-driver": "ready", "state-validation": "ready", "complete": "true"}),
        _node("b", **{"state-driver": "ready"}),
        table.NodeMeta(name="cpu", labels={}, annotations={}),  # never walked: left out
    ]
    report = table.build(_sr(rows=_rows()), nodes)
    assert report.states == STATES
    assert [(r.node, r.states, r.complete) for r in report.rows] == [
        ("a", ("ready", "ready"), True),
        ("b", ("ready", "failed"), False),
        ("c", ("ready", "-"), False),
    ]
    assert report.rows[0].kernel == "5.14" and report.rows[0].os == "rhel9.4"
    assert report.rows[1].reason == "state-validation: Error (exit code 1)"


def test_a_failing_node_without_marks_is_shown_and_a_waiting_node_says_why() -> None:
    rows = _rows()
    rows[0] = {**rows[0], "phase": "Progressing", "message": "c: ImagePullBackOff (and 1 more node)"}
    report = table.build(
        _sr(rows=rows), [_node("c", kernel=""), table.NodeMeta(name="b", labels={}, annotations={})]
    )
    assert [r.node for r in report.rows] == ["b", "c"]
    assert report.rows[1].reason == "state-driver: ImagePullBackOff"
    assert report.rows[1].kernel == ""


def test_the_text_is_aligned_and_ends_with_the_summary() -> None:
    nodes = [
        _node("a", **{"state-driver": "ready", "state-validation": "ready", "complete": "true"}),
        _node("bb"),
    ]
    text = table.format_text(table.build(_sr(rows=_rows()), nodes))
    lines = text.splitlines()
    assert lines[0].split() == ["NODE", "KERNEL", "DRIVER", "VALIDATION", "COMPLETE", "REASON"]
    assert lines[1].split() == ["a", "5.14", "ready", "ready", "true"]
    assert lines[2].split() == ["bb", "5.14", "-", "-", "-"]
    assert lines[0].index("KERNEL") == lines[1].index("5.14") == lines[2].index("5.14")
    assert lines[-1] == (
        "gpu: Degraded: StateFailed on 1 node (b: Error (exit code 1)) "
        "(1/3 complete, 0 failing, 1 kernel group)"
    )


def test_the_upgrade_column_appears_only_when_a_node_is_upgrading() -> None:
    plain = table.format_text(table.build(_sr(), [_node("a")]))
    assert "UPGRADE" not in plain
    report = table.build(_sr(), [_node("a", upgrade="draining"), _node("b")])
    text = table.format_text(report)
    assert text.splitlines()[0].split()[-2:] == ["UPGRADE", "REASON"]
    assert text.splitlines()[1].split()[-1] == "draining"
    assert "1 upgrading" in report.summary


def test_wide_adds_the_os_and_full_state_names() -> None:
    head = table.format_text(table.build(_sr(), [_node("a")]), wide=True).splitlines()[0].split()
    assert head == [
        "NODE",
        "KERNEL",
        "OS",
        "STATE-DRIVER",
        "STATE-VALIDATION",
        "COMPLETE",
        "UPGRADE",
        "REASON",
    ]


def test_json_is_the_report_for_one_name_and_a_list_otherwise() -> None:
    report = table.build(_sr(rows=_rows()), [_node("b", **{"state-driver": "ready"})])
    one = json.loads(table.format_reports([report], output="json", single=True))
    assert one["name"] == "gpu" and one["phase"] == "Degraded"
    assert one["nodes"] == [
        {
            "name": "b",
            "kernel": "5.14",
            "os": "rhel9.4",
            "states": {"state-driver": "ready", "state-validation": "failed"},
            "complete": False,
            "upgrade": "",
            "reason": "state-validation: Error (exit code 1)",
        }
    ]
    many = json.loads(table.format_reports([report, report], output="json", single=False))
    assert [i["name"] for i in many["items"]] == ["gpu", "gpu"]


def test_a_status_older_than_the_object_and_a_missing_status_are_said() -> None:
    assert "[status is of generation 1; the object is at 2]" in table.build(_sr(generation=2), []).summary
    bare = table.build({"metadata": {"name": "new"}}, [])
    assert bare.summary == "new: no status yet (is the operator running?)"
    assert table.format_text(bare).splitlines()[0] == "(no node walked for this SpecialResource yet)"


def test_nodes_listed_by_the_selector_have_rows_before_their_first_label() -> None:
    fresh = table.NodeMeta(
        name="c", labels={"feature.node.kubernetes.io/kernel-version.full": "5.14"}, annotations={}
    )
    assert [r.node for r in table.build(_sr(), [fresh]).rows] == []
    (row,) = table.build(_sr(), [fresh], selected=True).rows
    assert (row.node, row.kernel, row.complete) == ("c", "5.14", False)


def test_a_held_node_says_until_when_and_what_it_lost_and_the_summary_counts_it() -> None:
    held = [{"node": "d", "until": "2026-01-01T00:05:00Z", "missingLabels": ["feature.node.kubernetes.io/x"]}]
    nodes = [_node("a", **{"state-driver": "ready"}), table.NodeMeta(name="d", labels={}, annotations={})]
    report = table.build(_sr(rows=_rows(), heldNodes=held), nodes)
    assert [r.node for r in report.rows] == ["a", "d"]
    assert report.rows[1].reason == "held until 2026-01-01T00:05:00Z: lost feature.node.kubernetes.io/x"
    assert "1 held" in report.summary
    assert "held" not in table.build(_sr(rows=_rows()), nodes).summary
