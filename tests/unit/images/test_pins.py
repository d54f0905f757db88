"""Pinning checked per-kernel images by digest, and the registry answers as planner input
(``sro.images.pins``). Covered: which registries are checked, the digest reference, an
existing image pinned and a missing one not, an unchanged digest giving an equal object,
``sro.dev/pin-digest: "false"``, answers per kernel group. Left out: asking (integration)."""

from __future__ import annotations

import pytest

from sro.errors import Location
from sro.images import answers, needs, pins
from sro.model import desired
from sro.plan import observed

pytestmark = pytest.mark.unit

RHEL = desired.OsRelease(id="rhel", version_id="9.4")
K1 = desired.KernelGroup(kernel="5.14.0-427.13.1.el9_4.x86_64", os=RHEL)
IMAGE = "127.0.0.1:5000/drivers/driver:550-k1"
DIGEST = "sha256:" + "0f" * 32


def daemonset(image: str, *, annotations: dict[str, str] | None = None) -> desired.DesiredObject:
    body = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "driver", "namespace": "ns", "annotations": annotations or {}},
        "spec": {
            "template": {"spec": {"containers": [{"name": "d", "image": image}, {"name": "s", "image": "x"}]}}
        },
    }
    return desired.DesiredObject(
        body=body, state="state-driver", source=Location(file="d.yaml", line=1), kernel_group=K1
    )


def state(*objects: desired.DesiredObject) -> desired.DesiredState:
    return desired.DesiredState(
        sr_name="sr", namespace="ns", recipe="r", states=(desired.StateSpec(name="state-driver"),),
        objects=objects, nodes=("n1",), kernel_groups={"n1": K1},
    )  # fmt: skip


def images_of(s: desired.DesiredState) -> list[str]:
    return [c["image"] for c in s.objects[0].body["spec"]["template"]["spec"]["containers"]]


def test_only_listed_registries_are_checked() -> None:
    assert pins.checked(IMAGE, ["127.0.0.1:5000"])
    assert not pins.checked("nvcr.io/nvidia/driver:550", ["127.0.0.1:5000"])
    assert pins.checked("nvcr.io/nvidia/driver:550", ["*"])
    assert not pins.checked(IMAGE, [])


def test_an_existing_image_runs_by_its_digest_and_the_same_digest_gives_the_same_object() -> None:
    found = {
        K1.key: (observed.ImageCheck(image=IMAGE, state="state-driver", outcome="exists", digest=DIGEST),)
    }
    once, twice = pins.pin(state(daemonset(IMAGE)), found), pins.pin(state(daemonset(IMAGE)), found)
    assert images_of(once) == [f"127.0.0.1:5000/drivers/driver@{DIGEST}", "x"]
    assert once.objects[0].body == twice.objects[0].body
    spec = once.objects[0].body["spec"]["template"]["spec"]
    assert spec["tolerations"] == [
        {"key": "sr.sro.dev/driver-missing", "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_a_missing_image_and_an_opted_out_document_keep_their_tags() -> None:
    gone = {K1.key: (observed.ImageCheck(image=IMAGE, state="state-driver", outcome="missing"),)}
    assert images_of(pins.pin(state(daemonset(IMAGE)), gone)) == [IMAGE, "x"]
    found = {
        K1.key: (observed.ImageCheck(image=IMAGE, state="state-driver", outcome="exists", digest=DIGEST),)
    }
    opted_out = daemonset(IMAGE, annotations={"sro.dev/pin-digest": "false"})
    assert images_of(pins.pin(state(opted_out), found)) == [IMAGE, "x"]


def test_answers_become_checks_per_kernel_group() -> None:
    wanted = state(daemonset(IMAGE))
    need = [n for n in needs.kernel_images(wanted) if pins.checked(n.image, ["127.0.0.1:5000"])]
    answer = answers.Answer(image=IMAGE, outcome=answers.Outcome.MISSING, detail="MANIFEST_UNKNOWN")
    assert pins.checks(need, {IMAGE: answer}) == {
        K1.key: (
            observed.ImageCheck(
                image=IMAGE, state="state-driver", outcome="missing", detail="MANIFEST_UNKNOWN"
            ),
        )
    }
