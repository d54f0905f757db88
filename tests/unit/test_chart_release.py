"""hack/lib/release.py: one version from the git tag, written into the chart and the kustomize tree.

Covers the spellings (SemVer for image tag and chart, PEP 440 for the package) of a tagged
commit, a commit past a tag, a pre-release, a changed tree and a repository with no tag;
the rewriting of Chart.yaml, values.yaml and kustomization.yaml, comments kept; and
``hack/release --bump`` on a copy of the tree. The release itself (image, push, pull back)
runs in hack/release --check.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import release
import yaml

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("describe", "semver", "python"),
    [
        ("v0.2.0", "0.2.0", "0.2.0"),
        ("v0.2.0-0-gabc1234", "0.2.0", "0.2.0"),
        ("v0.2.0-3-gabc1234", "0.2.0-3-gabc1234", "0.2.0.post3+gabc1234"),
        ("v0.2.0-3-gabc1234-dirty", "0.2.0-3-gabc1234.dirty", "0.2.0.post3+gabc1234.dirty"),
        ("v0.2.0-0-gabc1234-dirty", "0.2.0-dirty", "0.2.0+dirty"),
        ("v1.0.0-rc.1", "1.0.0-rc.1", "1.0.0rc1"),
        ("v1.0.0-rc.1-2-gdeadbee", "1.0.0-rc.1-2-gdeadbee", "1.0.0rc1.post2+gdeadbee"),
        ("abc1234", "0.1.0-0-gabc1234", "0.1.0.post0+gabc1234"),
    ],
)
def test_a_git_description_gives_one_version_in_each_spelling(
    describe: str, semver: str, python: str
) -> None:
    assert release.from_describe(describe, fallback="0.1.0") == release.Versions(semver=semver, python=python)


@pytest.mark.parametrize("describe", ["release-1", "v1.2", "v1.0.0-preview-2-gabc1234"])
def test_a_description_that_is_not_a_version_tag_is_refused(describe: str) -> None:
    with pytest.raises(ValueError):
        release.from_describe(describe)


def test_stamping_the_chart_sets_version_app_version_and_the_pinned_image(tmp_path: Path) -> None:
    chart = tmp_path / "sro"
    shutil.copytree(REPO / "charts" / "sro", chart)
    digest = "sha256:" + "ab" * 32
    release.stamp_chart(chart, version="1.2.3-4-gabc1234", repository="127.0.0.1:5000/x/sro", digest=digest)
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    values_text = (chart / "values.yaml").read_text()
    image = yaml.safe_load(values_text)["image"]
    assert (meta["version"], meta["appVersion"]) == ("1.2.3-4-gabc1234", "1.2.3-4-gabc1234")
    assert image == {
        "repository": "127.0.0.1:5000/x/sro",
        "tag": "1.2.3-4-gabc1234",
        "digest": digest,
        "pullPolicy": "IfNotPresent",
    }
    assert "# hack/release sets repository" in values_text  # comments stay
    original = (REPO / "charts" / "sro" / "values.yaml").read_text()
    assert len(values_text.splitlines()) == len(original.splitlines())


def test_setting_the_kustomize_image_names_repository_tag_and_digest(tmp_path: Path) -> None:
    target = tmp_path / "kustomization.yaml"
    shutil.copy(REPO / "manifests" / "kustomization.yaml", target)
    digest = "sha256:" + "cd" * 32
    release.set_image(target, repository="registry.example.com/sro", tag="2.0.0", digest=digest)
    text = target.read_text()
    images = yaml.safe_load(text)["images"]
    assert images == [
        {"name": "sro", "newName": "registry.example.com/sro", "newTag": "2.0.0", "digest": digest}
    ]
    assert yaml.safe_load(text)["replacements"]  # the rest of the file is untouched
    assert text.startswith("# sro, installed with")


def _tree(tmp_path: Path) -> Path:
    """The files hack/release --bump reads and writes, copied."""
    root = tmp_path / "tree"
    for name in ("charts", "manifests"):
        shutil.copytree(REPO / name, root / name)
    (root / "hack" / "lib").mkdir(parents=True)
    for name in ("release", "lib/release.py", "lib/versions.env", "lib/image.sh"):
        shutil.copy2(REPO / "hack" / name, root / "hack" / name)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "sro").mkdir()
    shutil.copy(REPO / "sro" / "__init__.py", root / "sro" / "__init__.py")
    return root


def test_bump_writes_one_version_into_package_chart_and_kustomize_image(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    env = {**os.environ, "REGISTRY": "registry.example.com/accel"}
    proc = subprocess.run(
        [str(root / "hack" / "release"), "--bump", "1.4.0-rc.2"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    with (root / "pyproject.toml").open("rb") as f:
        assert tomllib.load(f)["project"]["version"] == "1.4.0rc2"
    assert '__version__ = "1.4.0rc2"' in (root / "sro" / "__init__.py").read_text()
    meta = yaml.safe_load((root / "charts" / "sro" / "Chart.yaml").read_text())
    assert (meta["version"], meta["appVersion"]) == ("1.4.0-rc.2", "1.4.0-rc.2")
    image = yaml.safe_load((root / "charts" / "sro" / "values.yaml").read_text())["image"]
    (entry,) = yaml.safe_load((root / "manifests" / "kustomization.yaml").read_text())["images"]
    assert (image["repository"], image["tag"]) == ("registry.example.com/accel/sro", "1.4.0-rc.2")
    assert entry == {"name": "sro", "newName": "registry.example.com/accel/sro", "newTag": "1.4.0-rc.2"}


def test_bump_refuses_what_is_not_a_release_version(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    before = (root / "charts" / "sro" / "Chart.yaml").read_text()
    proc = subprocess.run(
        [str(root / "hack" / "release"), "--bump", "1.4"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert "not a release tag description" in proc.stderr and "Traceback" not in proc.stderr
    assert (root / "charts" / "sro" / "Chart.yaml").read_text() == before
