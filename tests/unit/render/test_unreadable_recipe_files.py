"""Recipe files that are not text: one ``RecipeInvalid`` naming the file, never a traceback.

Covers: bytes that are not UTF-8 (with the line they are on), a state entry that is not a
regular file (a FIFO), a file over the size bound, a directory without ``recipe.yaml``
(saying that is what is missing), and ``sro lint`` over all of them printing
``file:line: message`` lines and exiting 1.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sro import cli, errors
from sro.render import recipe

pytestmark = pytest.mark.unit

RECIPE = "description: d\nnodeSelector: {}\nstates:\n  - name: state-a\n"
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"


def make(tmp_path: Path, name: str, files: dict[str, bytes]) -> Path:
    root = tmp_path / name
    for rel, data in {"recipe.yaml": RECIPE.encode(), **files}.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root


def test_bytes_that_are_not_utf8_name_the_file_and_line(tmp_path: Path) -> None:
    root = make(tmp_path, "latin", {"state-a/cm.yaml": CM.encode() + b"data: {k: caf\xe9}\n"})
    with pytest.raises(errors.RecipeInvalid) as caught:
        recipe.files_from_directory(root)
    assert str(caught.value) == f"{root}/state-a/cm.yaml:4: not UTF-8 text (byte 0xe9)"


def test_an_entry_that_is_not_a_regular_file_is_named(tmp_path: Path) -> None:
    root = make(tmp_path, "fifo", {"state-a/cm.yaml": CM.encode()})
    os.mkfifo(root / "state-a" / "pipe.yaml")
    with pytest.raises(errors.RecipeInvalid, match=r"state-a/pipe.yaml: not a regular file"):
        recipe.files_from_directory(root)


def test_a_file_over_the_bound_is_refused_before_it_is_read_whole(tmp_path: Path) -> None:
    root = make(tmp_path, "huge", {"state-a/cm.yaml": b"#" * (recipe.MAX_FILE_BYTES + 10)})
    with pytest.raises(errors.RecipeInvalid, match=f"larger than {recipe.MAX_FILE_BYTES} bytes"):
        recipe.files_from_directory(root)


def test_a_directory_without_recipe_yaml_says_that_is_what_is_missing(tmp_path: Path) -> None:
    root = tmp_path / "bare"
    (root / "state-a").mkdir(parents=True)
    with pytest.raises(errors.RecipeInvalid, match=r"recipe\.yaml is missing"):
        recipe.files_from_directory(root)


def test_lint_prints_one_line_per_problem_and_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = make(tmp_path, "latin", {"state-a/cm.yaml": b"\xff\xfe"})
    bare = tmp_path / "bare"
    (bare / "state-a").mkdir(parents=True)
    code = cli.main(["lint", str(bad), str(bare)])
    out = capsys.readouterr()
    assert code != 0
    assert "Traceback" not in out.out + out.err
    assert f"{bad}/state-a/cm.yaml:1: not UTF-8 text" in out.out
    assert f"{bare}/recipe.yaml: recipe.yaml is missing" in out.out, "every directory is reported"
