"""The planner and per-kernel images a registry says are not there (``sro.plan.images``).

Covered: a node moved to a kernel whose image is missing (its group's DaemonSet never
written, the node's recorded group kept, the old DaemonSet kept, the driver-missing
taint, ImageMissing naming image, kernel and node), then the image appearing (the group
proceeds, the node walks again, the taint goes once its driver is ready); an unreachable
registry (RegistryUnavailable, nothing written, moved, tainted or deleted); the kernel
rows' image and digest. Left out: asking registries (tests/integration, tests/e2e).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest
from builders import K1, K2, SR, World, ds, label, node, node_pods, states, wanted

from sro.model import desired
from sro.plan import actions, images, lifecycle, node_patches, observed

pytestmark = pytest.mark.unit

IMAGE_K1 = "registry.test/driver:k1"
IMAGE_K2 = "registry.test/driver:k2"
DIGEST = "sha256:" + "ab" * 32


def exists(image: str) -> tuple[observed.ImageCheck, ...]:
    return (observed.ImageCheck(image=image, state="state-driver", outcome="exists", digest=DIGEST),)


def missing(image: str) -> tuple[observed.ImageCheck, ...]:
    detail = "MANIFEST_UNKNOWN: manifest unknown"
    return (observed.ImageCheck(image=image, state="state-driver", outcome="missing", detail=detail),)


def unreachable(image: str) -> tuple[observed.ImageCheck, ...]:
    detail = "registry.test: HTTP 500"
    return (observed.ImageCheck(image=image, state="state-driver", outcome="unreachable", detail=detail),)


@dataclass
class Checked(World):
    """``World`` with registry answers, and taints carried out as the engine would."""

    images: dict[str, tuple[observed.ImageCheck, ...]] = field(default_factory=dict)

    def observe(self) -> observed.Observed:
        return replace(super().observe(), images=dict(self.images))

    def step(self) -> actions.Plan:
        before = dict(self.nodes)
        p = super().step()
        for change in p.node_labels:
            if change.taints is None:
                continue
            patch = node_patches.taint_patch(before[change.node], sr_name=SR, wanted=change.taints)
            assert patch is not None
            n = self.nodes[change.node]
            notes = {**n.annotations, **patch["metadata"]["annotations"]}
            taints = tuple(t for t in change.taints)  # the SR has no taints of its own here
            self.nodes[change.node] = replace(
                n, annotations={k: v for k, v in notes.items() if v is not None}, taints=taints
            )
        return p


TAINT = images.driver_missing_taint(SR)


def moved_world() -> Checked:
    """n1 and n2 on K1, settled; then n2 boots K2."""
    objects = [
        ds("driver-k1", "state-driver", group=K1),
        *node_pods("validate", "state-validation", ["n1", "n2"]),
    ]
    world = Checked(
        desired=wanted(states("state-driver", "state-validation"), objects, ["n1", "n2"]),
        nodes={"n1": node("n1"), "n2": node("n2")},
        images={K1.key: exists(IMAGE_K1)},
    )
    world.settle()
    moved = [
        ds("driver-k1", "state-driver", group=K1),
        ds("driver-k2", "state-driver", group=K2),
        *node_pods("validate", "state-validation", ["n1", "n2"]),
    ]
    world.desired = wanted(world.desired.states, moved, ["n1", "n2"], groups={"n1": K1, "n2": K2})
    return world


def _refs(objects: tuple[desired.DesiredObject, ...]) -> set[str]:
    return {o.ref.name for o in objects}


def test_a_node_moved_to_a_kernel_without_an_image_is_held_tainted_and_named_until_the_image_exists() -> None:
    world = moved_world()
    world.images[K2.key] = missing(IMAGE_K2)
    for _ in range(3):
        p = world.step()
        assert "driver-k2" not in _refs(p.apply)
        assert not [d for d in p.delete if d.ref.kind == "DaemonSet"]
    assert world.nodes["n2"].annotations[lifecycle.kernel_annotation(SR)] == K1.key
    assert TAINT in world.nodes["n2"].taints
    assert TAINT not in world.nodes["n1"].taints
    degraded = {c["type"]: c for c in world.status["conditions"]}["Degraded"]
    assert degraded["status"] == "True" and degraded["reason"] == images.IMAGE_MISSING
    assert (
        IMAGE_K2 in degraded["message"] and K2.kernel in degraded["message"] and "n2" in degraded["message"]
    )
    assert world.status["phase"] == "Degraded"

    world.images[K2.key] = exists(IMAGE_K2)
    p = world.step()
    assert "driver-k2" in _refs(p.apply)
    assert world.nodes["n2"].annotations[lifecycle.kernel_annotation(SR)] == K2.key
    assert TAINT in world.nodes["n2"].taints  # until its driver is ready
    world.settle()
    assert TAINT not in world.nodes["n2"].taints
    assert world.complete_states("n2") == {"state-driver", "state-validation"}
    assert world.status["phase"] == "Ready"
    assert world.status["kernels"] == [
        {"kernel": K1.kernel, "os": "rhel9.4", "nodes": 1, "image": IMAGE_K1, "digest": DIGEST},
        {"kernel": K2.kernel, "os": "rhel9.4", "nodes": 1, "image": IMAGE_K2, "digest": DIGEST},
    ]


def test_the_old_groups_daemonset_stays_while_its_only_node_waits_for_the_new_image() -> None:
    world = moved_world()
    world.images[K2.key] = missing(IMAGE_K2)
    only = [
        ds("driver-k2", "state-driver", group=K2),
        *node_pods("validate", "state-validation", ["n1", "n2"]),
    ]
    world.desired = wanted(world.desired.states, only, ["n1", "n2"], groups={"n1": K2, "n2": K2})
    p = world.step()
    assert not p.delete or all(d.ref.kind != "DaemonSet" for d in p.delete)
    assert any(o.name == "driver-k1" for o in world.objects if o.kind == "DaemonSet")
    world.images[K2.key] = exists(IMAGE_K2)
    p = world.step()
    assert ("driver-k1", "no longer desired") in [(d.ref.name, d.reason) for d in p.delete]


def test_an_unreachable_registry_is_registry_unavailable_and_nothing_moves_or_goes() -> None:
    world = moved_world()
    world.images[K2.key] = unreachable(IMAGE_K2)
    p = world.step()
    assert "driver-k2" not in _refs(p.apply)
    assert not p.delete or all(d.ref.kind != "DaemonSet" for d in p.delete)
    assert world.nodes["n2"].annotations[lifecycle.kernel_annotation(SR)] == K1.key
    assert TAINT not in world.nodes["n2"].taints
    degraded = {c["type"]: c for c in world.status["conditions"]}["Degraded"]
    assert degraded["reason"] == images.REGISTRY_UNAVAILABLE
    assert "HTTP 500" in degraded["message"] and images.IMAGE_MISSING not in degraded["message"]
    assert world.complete_states("n1") == {"state-driver", "state-validation"}


def test_nothing_checked_changes_nothing() -> None:
    world = moved_world()
    world.images = {}
    p = world.step()
    assert "driver-k2" in _refs(p.apply)
    assert [c.annotations for c in p.node_labels] == [{lifecycle.kernel_annotation(SR): K2.key}]
    assert label("state-driver") in p.node_labels[0].labels


def test_an_image_that_is_not_a_reference_is_named_as_such_not_as_missing() -> None:
    world = moved_world()
    text = "registry.test/driver:" + "x" * 200
    detail = "a tag is at most 128 characters"
    world.images[K2.key] = (
        observed.ImageCheck(image=text, state="state-driver", outcome="invalid", detail=detail),
    )
    p = world.step()
    assert "driver-k2" not in _refs(p.apply)
    degraded = {c["type"]: c for c in world.status["conditions"]}["Degraded"]
    assert f"image {text} is not an image reference: {detail}" in degraded["message"]
    assert "does not exist" not in degraded["message"]
