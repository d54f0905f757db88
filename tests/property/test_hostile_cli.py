"""``sro lint`` and ``sro render``, as child processes, on hostile recipes and values.

Whatever a recipe directory or a SpecialResource holds, each command ends by itself,
exits 0 (fine) or 1 (something invalid), never prints a traceback, says every problem
as one ``file:line: message`` line (or one ``sro <command>: ...`` line), and stays within
a bounded wall time and peak memory (the child's own VmHWM, see ``sro_child.run_sro``).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hostile_recipes import VALUES_DOCUMENT, Case, cases
from hypothesis import HealthCheck, example, given, settings
from sro_child import INVENTORY, REPO, Ran, run_sro

from sro.hooks import offline
from sro.model import crd_limits

pytestmark = pytest.mark.unit

SECONDS_MAX = 15.0
RSS_MAX_MIB = 400.0
EXAMPLES = 30
NAME = "hostile"
SUITE = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _bounded(ran: Ran, what: str) -> None:
    assert ran.signal is None, f"{what}: ended by signal {ran.signal}"
    assert ran.exit_code in (0, 1), f"{what}: exit {ran.exit_code}\n{ran.stderr[-2000:]}"
    assert "Traceback" not in ran.stdout + ran.stderr, f"{what}: traceback\n{ran.stderr[-4000:]}"
    assert ran.seconds < SECONDS_MAX, f"{what}: took {ran.seconds:.1f}s"
    assert ran.peak_rss_mib < RSS_MAX_MIB, f"{what}: peak RSS {ran.peak_rss_mib:.0f} MiB"


def _one_line_error(stderr: str, command: str) -> None:
    lines = stderr.split("\n")[:-1]
    assert len(lines) <= 1, f"sro {command} printed {len(lines)} lines on stderr:\n{stderr[:2000]}"
    assert all(line.startswith(f"sro {command}: ") for line in lines), stderr[:2000]


def check_lint(ran: Ran, *, inputs: tuple[Path, ...]) -> None:
    _bounded(ran, "sro lint")
    prefixes = tuple(str(p) for p in inputs)
    for line in ran.stdout.split("\n")[:-1]:
        assert line.startswith(prefixes), f"not a file:line: message line: {line[:300]!r}"
        assert ": " in line, line[:300]
    _one_line_error(ran.stderr, "lint")
    if ran.exit_code == 1:
        assert ran.stdout.strip() or ran.stderr.strip(), "exit 1 without saying why"


def check_render(ran: Ran, *, recipe: Path) -> None:
    _bounded(ran, "sro render")
    if ran.exit_code == 1:
        _one_line_error(ran.stderr, "render")
        assert ran.stderr.strip(), "exit 1 without saying why"
    else:
        assert ran.stdout.startswith("# sro render:"), ran.stdout[:300]
        for line in ran.stderr.split("\n")[:-1]:
            assert ": warning: " in line, f"not a warning line: {line[:300]!r}"


def _lint_and_render(case: Case) -> None:
    with tempfile.TemporaryDirectory(prefix="sro-hostile-") as tmp:
        recipe, sr = case.write(Path(tmp), NAME)
        check_lint(run_sro("lint", str(recipe), str(sr)), inputs=(recipe, sr))
        rendered = run_sro("render", "--recipe", str(recipe), "--sr", str(sr), "--nodes", str(INVENTORY))
        check_render(rendered, recipe=recipe)


def _known(doc: str, *, states: int = 1) -> Case:
    """A case once found to break a bound, kept as an explicit example."""
    names = [f"s{i}" for i in range(states)]
    files = {"recipe.yaml": ("states:\n" + "".join(f"  - name: {n}\n" for n in names)).encode()}
    files.update({f"{n}/doc.yaml": doc.encode() for n in names})
    return Case(files=files, set_values={"x": "a\n---\n&b *c [", "y": "'\"]}"})


FORMAT_BOMB = """apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  namespace: x
data:
  b: {{ "{0:>999999999}".format(1) }}
"""
PRINT_BOMB = FORMAT_BOMB.replace('"{0:>999999999}".format(1)', "[[1] * 100000] * 100000")
VALUES = VALUES_DOCUMENT.format(annotation='sro.dev/wait-for-logs: "(a+)+$"')


@pytest.mark.timeout(150)
@SUITE
@example(case=_known(FORMAT_BOMB))
@example(case=_known(PRINT_BOMB))
@example(case=_known(VALUES))
@example(case=_known(VALUES, states=crd_limits.STATES_MAX + 1))
@given(case=cases())
def test_lint_and_render_of_a_hostile_recipe_end_cleanly(case: Case) -> None:
    _lint_and_render(case)


BROKEN = sorted(p for p in (REPO / "tests" / "recipes" / "broken").iterdir() if p.is_dir())


@pytest.mark.timeout(60)
def test_linting_every_broken_recipe_never_prints_a_traceback() -> None:
    ran = run_sro("lint", *(str(p) for p in BROKEN))
    check_lint(ran, inputs=tuple(BROKEN))
    assert ran.exit_code == 1
    assert {line.split("/")[0] for line in ran.stdout.splitlines()} == {""}  # absolute paths
    for case in BROKEN:
        assert str(case) in ran.stdout, f"{case.name}: no problem reported"


def _odd_inputs(root: Path) -> tuple[list[Path], Path]:
    """Recipe directories and SpecialResource files no editor would make on purpose."""
    odd = root / "odd"
    (odd / "s0").mkdir(parents=True)
    (odd / "recipe.yaml").write_text("states:\n  - name: s0\n")
    (odd / "s0" / "a.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: b}\n")
    (odd / "s0" / "sub.yaml").mkdir()
    os.mkfifo(odd / "s0" / "fifo.yaml")
    (odd / "s0" / "zero.yaml").symlink_to("/dev/zero")
    (odd / "s0" / "loop.yaml").symlink_to("loop.yaml")
    names = root / "names"
    (names / "s0").mkdir(parents=True)
    (names / "recipe.yaml").write_text("states:\n  - name: s0\n")
    os.mkdir(os.fsencode(names) + b"/\xff\xfe")
    (names / "s0" / "new\nline.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ x }}\n"
    )
    dir_as_file = root / "dir-as-file"
    (dir_as_file / "recipe.yaml").mkdir(parents=True)
    device = root / "device"
    device.mkdir()
    (device / "recipe.yaml").symlink_to("/dev/zero")
    not_utf8 = root / "not-utf8.sr.yaml"
    not_utf8.write_bytes(b"apiVersion: sro.dev/v1alpha1\nkind: SpecialResource\nmetadata: {name: \xff}\n")
    deep = root / "deep.sr.yaml"
    deep.write_text(
        '{"kind": "SpecialResource", "metadata": {"name": "x"}, "spec": {"set": '
        + "[" * 5000
        + "]" * 5000
        + "}}"
    )
    pipe = root / "pipe.sr.yaml"
    os.mkfifo(pipe)
    return [odd, names, dir_as_file, device], not_utf8.parent


@pytest.mark.timeout(60)
def test_linting_odd_files_says_what_is_wrong_in_one_line_each() -> None:
    with tempfile.TemporaryDirectory(prefix="sro-odd-") as tmp:
        root = Path(tmp)
        recipes, _ = _odd_inputs(root)
        files = sorted(root.glob("*.sr.yaml"))
        ran = run_sro("lint", *(str(p) for p in recipes), *(str(p) for p in files))
        check_lint(ran, inputs=(root,))
        assert ran.exit_code == 1
        for path in [*recipes, *files]:
            assert f"{path}" in ran.stdout, f"{path.name}: nothing said"
        assert "not UTF-8 text (byte 0xff)" in ran.stdout
        assert "nested deeper than" in ran.stdout
        rendered = run_sro(
            "render", "--recipe", str(recipes[0]), "--sr", str(files[0]), "--nodes", "/dev/zero"
        )
        assert rendered.exit_code == 2, rendered.stderr  # a flag naming a device: a usage error
        assert "Traceback" not in rendered.stderr
        _one_line_error(rendered.stderr, "render")


@pytest.mark.timeout(60)
def test_a_file_of_many_specialresources_renders_a_bounded_number_of_times(tmp_path: Path) -> None:
    docs = [
        json.dumps(
            {"kind": "SpecialResource", "metadata": {"name": f"s{i}"}, "spec": {"recipe": "simple-kmod"}}
        )
        for i in range(offline.MAX_RENDERS + 10)
    ]
    many = tmp_path / "many.sr.yaml"
    many.write_text("\n---\n".join(docs) + "\n")
    recipe = REPO / "assets" / "simple-kmod"
    ran = run_sro("lint", str(recipe), str(many))
    _bounded(ran, "sro lint")
    assert ran.exit_code == 0, ran.stdout[-2000:]
    assert ran.stdout.splitlines() == [
        f"{recipe}: warning: rendered for the first {offline.MAX_RENDERS} of its "
        f"{offline.MAX_RENDERS + 10} SpecialResources only"
    ]
