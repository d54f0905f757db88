"""``sro preflight``'s pure parts: the synthetic node group, the images a kernel needs, the
output, and the usage errors (exit 2). Registries are asked in tests/integration/test_preflight.py."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from sro import cli, cli_preflight
from sro.hooks import offline, pipeline
from sro.images import answers, needs
from sro.model import desired, selection
from sro.render import kinds, values
from sro.render import recipe as recipe_

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
KERNEL = "5.14.0-503.11.1.el9_5.x86_64"
RHEL = desired.OsRelease(id="rhel", version_id="9.5")


def env() -> pipeline.Environment:
    return pipeline.Environment(
        cluster_version="1.36",
        operator=values.OperatorInfo(namespace="sro-system", image="", version="0"),
        proxy=values.ProxySettings(),
        is_namespaced=kinds.builtin_is_namespaced,
        is_served=kinds.builtin_is_served,
    )


def test_the_synthetic_node_is_selected_and_carries_the_kernel_and_os() -> None:
    node = cli_preflight.synthetic_node(
        kernel=KERNEL, os=RHEL, selector={"pci-10de.present": "true"}, arch="amd64"
    )
    assert selection.matches(node, {"pci-10de.present": "true"})
    assert node.kernel == KERNEL
    assert node.labels["feature.node.kubernetes.io/system-os_release.VERSION_ID"] == "9.5"


def test_a_kernel_needs_the_images_of_its_kernel_affine_documents_only() -> None:
    recipe = recipe_.load_directory(REPO / "assets" / "simple-kmod")
    sr = offline.synthetic_sr("simple-kmod")
    other = desired.OsRelease(id="ubuntu", version_id="22.04")
    found, _ = cli_preflight.needs_for(sr, recipe, kernel=KERNEL, oses=[RHEL, other], arch="amd64", env=env())
    # The validation pod's ubi-minimal image is not kernel-affine; both OS groups need the same image.
    assert [(n.state, n.image) for n in found] == [
        ("state-driver", f"quay.io/openshift-psap/simple-kmod:{KERNEL}")
    ]
    assert found[0].sr == "simple-kmod" and found[0].namespace


def row(image: str, answer: answers.Answer) -> cli_preflight.Row:
    group = desired.KernelGroup(kernel=KERNEL, os=RHEL)
    need = needs.Need(
        sr="gpu", state="state-driver", image=image, kernel_group=group, namespace="ns", pod_spec={}
    )
    return cli_preflight.Row(need=need, answer=answer)


def test_the_table_says_which_images_miss_and_why() -> None:
    rows = [
        row(
            "r/a:1",
            answers.Answer(image="r/a:1", outcome=answers.Outcome.EXISTS, digest="sha256:" + "a" * 64),
        ),
        row(
            "r/b:1",
            answers.Answer(image="r/b:1", outcome=answers.Outcome.MISSING, detail="MANIFEST_UNKNOWN: x"),
        ),
    ]
    lines = cli_preflight.format_table(rows).splitlines()
    assert lines[0].split() == ["SR", "STATE", "IMAGE", "RESULT", "DIGEST"]
    assert lines[1].split() == ["gpu", "state-driver", "r/a:1", "exists", "sha256:" + "a" * 64]
    assert lines[2].split()[3:] == ["missing:", "MANIFEST_UNKNOWN:", "x", "-"]
    document = json.loads(cli_preflight.format_json(rows, kernel=KERNEL))
    assert document["ready"] is False and [i["result"] for i in document["images"]] == ["exists", "missing"]


def test_pull_secrets_are_read_from_secrets_and_docker_config_files(tmp_path: Path) -> None:
    config = {"auths": {"reg.example": {"auth": base64.b64encode(b"u:p").decode()}}}
    encoded = base64.b64encode(json.dumps(config).encode()).decode()
    (tmp_path / "secret.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                        "data": {".dockerconfigjson": encoded}})
    )  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    found = cli_preflight.read_pull_secrets([tmp_path / "secret.yaml", tmp_path / "config.json"])
    assert [s.name for s in found] == ["s", str(tmp_path / "config.json")]
    assert all(s.data[".dockerconfigjson"] == encoded for s in found)


@pytest.mark.parametrize(
    "argv",
    [
        [
            "preflight",
            "--kernel",
            KERNEL,
            "--recipe",
            str(REPO / "assets" / "simple-kmod"),
        ],  # no --os offline
        ["preflight", "--kernel", KERNEL, "--os", "rhel"],  # no ID:VERSION_ID
        ["preflight", "--kernel", KERNEL, "--os", "rhel:9.4"],  # nothing to check
        ["preflight", "--os", "rhel:9.4", "--recipe", "x"],  # no --kernel
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        raise SystemExit(cli.main(argv))
    assert exited.value.code == 2
    assert "preflight" in capsys.readouterr().err


def test_the_operator_sees_the_images_per_kernel_group() -> None:
    recipe = recipe_.load_directory(REPO / "assets" / "simple-kmod")
    sr = offline.synthetic_sr("simple-kmod")
    other = "5.15.0-105-generic"
    nodes = [
        cli_preflight.synthetic_node(kernel=KERNEL, os=RHEL, selector=recipe.node_selector, arch="amd64"),
        cli_preflight.synthetic_node(
            kernel=other, os=desired.OsRelease(id="ubuntu", version_id="22.04"), selector={}, arch="amd64"
        ),
    ]
    state = pipeline.render_desired(sr, recipe, nodes, env=env())
    every = needs.kernel_images(state)
    # the build Jobs' builder images are asked too (their digests are a build's inputs)
    assert {n.state for n in every if "buildah" in n.image} == {"state-driver-build"}
    found = [n for n in every if n.state != "state-driver-build"]
    assert sorted((n.kernel_group.kernel, n.image.rpartition(":")[2]) for n in found) == [
        (KERNEL, KERNEL),
        (other, other),
    ]
    assert all(n.pod_spec.get("containers") for n in found)
