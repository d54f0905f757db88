"""The whole build path, real: sro's build Job, run with buildah, pushes the driver image.

The simulated nodes run no containers, so the test does what a kubelet would with the
build Job sro wrote: it runs that Job's container command, arguments and environment
(the kernel values sro rendered into them) on this machine with buildah (chroot
isolation, vfs storage in a temporary directory, no container engine, as ``hack/image``
builds), which builds a tiny image from scratch and pushes it to the loopback
``docker-registry`` the operator checks. Nothing of the image is made by the test.

The simulated Job pod completes about a second after it starts, possibly before the
real build has pushed; sro then looks the image up again, finds it missing and says
``BuildFailed`` until the missing answer's cache time (2 s here) runs out and the pushed
image is found. The test accepts that detour and requires the end: the node completes,
its driver runs the digest buildah pushed, whose image records the kernel sro rendered.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import specialresources as srs
from conftest import Made, unique
from operator_process import Operator
from support import registry as registry_mod
from support import waiting
from test_image_builds import RHEL, recipe

pytestmark = pytest.mark.e2e

K5 = "5.14.0-611.5.1.el9_7.x86_64"
REPOSITORY = "drivers/built"
BUILD = """\
ctr=$(buildah from scratch)
printf '%s\\n' "$KERNEL_VERSION" > "$TMPDIR/kernel-version"
buildah copy "$ctr" "$TMPDIR/kernel-version" /kernel-version
buildah config --label sro.dev/kernel="$KERNEL_VERSION" "$ctr"
buildah commit -q "$ctr" "$IMAGE"
buildah rm "$ctr"
buildah push --tls-verify=false "$IMAGE"
echo "pushed $IMAGE"
"""
MANIFESTS = ", ".join(
    [
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ]
)


def buildah_recipe(host: str) -> dict[str, str]:
    """``test_image_builds.recipe`` with a build Job that really builds with buildah."""
    files = recipe(host)
    job = files["state-driver-build/job.yaml"]
    head = job[: job.index("          args:")]
    script = "".join(f"              {line}\n" for line in BUILD.splitlines())
    files["state-driver-build/job.yaml"] = head + (
        '          command: ["/bin/sh", "-ec"]\n'
        "          args:\n"
        "            - |\n"
        f"{script}"
        "          env:\n"
        "            - name: KERNEL_VERSION\n"
        '              value: "{{ kernel.full }}"\n'
        "            - name: IMAGE\n"
        f'              value: "{host}/{REPOSITORY}:{{{{ kernel.full }}}}"\n'
    )
    return files


@pytest.fixture(scope="module")
def reg(operator: Operator, tmp_path_factory: pytest.TempPathFactory) -> Iterator[registry_mod.Registry]:
    """A loopback registry the operator checks, missing answers kept 2 s (restored after)."""
    started = registry_mod.start(tmp_path_factory.mktemp("registry"))
    patch = pytest.MonkeyPatch()
    patch.setenv("SRO_IMAGE_CHECK_REGISTRIES", started.host)
    patch.setenv("SRO_IMAGE_CHECK_MISSING_TTL", "2")
    operator.restart()
    try:
        yield started
    finally:
        patch.undo()
        operator.restart()
        started.stop()


def run_container(job: dict[str, Any], scratch: Path) -> subprocess.CompletedProcess[str]:
    """Run the Job's (only) container as a kubelet would: its command, arguments and
    literal environment, with buildah's storage in ``scratch``."""
    [container] = job["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container.get("env") or () if "value" in e}
    (scratch / "tmp").mkdir(parents=True, exist_ok=True)
    conf = scratch / "storage.conf"
    conf.write_text(
        f'[storage]\ndriver = "vfs"\nrunroot = "{scratch / "run"}"\ngraphroot = "{scratch / "root"}"\n'
    )
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    env = {**base, **env, "TMPDIR": str(scratch / "tmp"), "CONTAINERS_STORAGE_CONF": str(conf),
           "BUILDAH_ISOLATION": "chroot"}  # fmt: skip
    return subprocess.run(
        [*container["command"], *container.get("args", [])], env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip


def _get(url: str, accept: str = "") -> tuple[dict[str, str], bytes]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return dict(answer.headers), answer.read()


async def test_the_build_job_sro_writes_builds_and_pushes_a_real_image_the_node_then_runs(
    made: Made,
    reg: registry_mod.Registry,
    recipe_dir: Callable[[str, dict[str, str]], Path],
    tmp_path: Path,
) -> None:
    assert shutil.which("buildah"), "buildah is missing (hack/test installs it as root)"
    group, nodes = made.group("bah", [{"count": 1, "kernel": K5, "os": RHEL}])
    recipe_name = unique("bah-recipe")
    recipe_dir(recipe_name, buildah_recipe(reg.host))
    name = made.sr(srs.manifest(unique("bah"), recipe=recipe_name, node_selector={srs.GROUP_LABEL: group}))

    def job() -> dict[str, Any] | None:
        return next(iter(srs.owned(made.cluster, "jobs", name, namespace=name)), None)

    found = await waiting.wait_for(job, timeout=60, interval=0.2, message="the build Job")
    built = run_container(found, tmp_path / "buildah")
    assert built.returncode == 0, built.stderr[-2000:]
    assert f"pushed {reg.host}/{REPOSITORY}:{K5}" in built.stdout

    status = await srs.wait_ready(made.cluster, name, within=120)
    headers, body = _get(f"{reg.url}/v2/{REPOSITORY}/manifests/{K5}", MANIFESTS)
    digest = headers["Docker-Content-Digest"]
    config = json.loads(body)["config"]["digest"]
    labels = json.loads(_get(f"{reg.url}/v2/{REPOSITORY}/blobs/{config}")[1])["config"]["Labels"]
    assert labels["sro.dev/kernel"] == K5, "the image records the kernel sro rendered into the Job"
    [row] = status["kernels"]
    assert (row["kernel"], row["digest"]) == (K5, digest)
    [ds] = srs.owned(made.cluster, "daemonsets", name, namespace=name)
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == f"{reg.host}/{REPOSITORY}@{digest}"
    labels_of_node = srs.sr_labels(made.cluster.kubectl_json("get", "node", nodes[0]), name)
    assert labels_of_node.get(f"{name}.sro.dev/complete") == "true", labels_of_node
