"""From registry answers to the planner's input, and to the images a render runs.

Pure. The engine renders, asks the registry about the images ``needs.kernel_images``
names (only those whose registry ``checked`` says is to be asked), then:

* ``checks`` turns the answers into ``Observed.images`` (group key -> one
  ``ImageCheck`` per image), which the planner reads (``sro.plan.images``);
* ``pin`` rewrites each container image of a checked kernel-affine workload to
  ``repository@digest``, the manifest the registry answered with, unless its document
  says ``sro.dev/pin-digest: "false"``. Only images that exist are pinned; a group whose
  image does not is not written at all. The same digest always gives the same object,
  so asking again (the answers' cache expires) never changes what is applied and never
  rolls a DaemonSet; a moved tag (a new digest) does, which is the point. Checked
  workloads also tolerate ``<sr>.sro.dev/driver-missing``: the planner taints a node
  whose driver image is missing, and the driver it gets once the image exists must be
  able to land there and take the taint off.

``sro render`` does not ask registries, so what it prints carries the tags as written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sro.hooks import base, pin_digest, podspec
from sro.images import answers, needs, reference
from sro.model import desired
from sro.plan import images, observed

EVERY_REGISTRY = "*"


def registry_of(image: str) -> str:
    """The registry host (and port) ``image`` is pulled from; "" when it is no reference."""
    try:
        return reference.parse(image).registry
    except reference.InvalidReference:
        return ""


def checked(image: str, registries: Iterable[str]) -> bool:
    """Whether ``image`` is checked: its registry is listed, or ``*`` is."""
    listed = set(registries)
    return EVERY_REGISTRY in listed or registry_of(image) in listed


def digest_reference(image: str, digest: str) -> str:
    """``image`` by ``digest``: ``registry/repository@digest`` (its tag dropped)."""
    ref = reference.parse(image)
    return f"{ref.registry}/{ref.repository}@{digest}"


def checks(
    wanted: Sequence[needs.Need], found: Mapping[str, answers.Answer]
) -> dict[str, tuple[observed.ImageCheck, ...]]:
    """Group key -> what the registry said of each image that group needs."""
    out: dict[str, list[observed.ImageCheck]] = {}
    for need in wanted:
        answer = found.get(need.image)
        if answer is None:
            continue
        check = observed.ImageCheck(
            image=need.image,
            state=need.state,
            outcome=str(answer.outcome),
            digest=answer.digest,
            detail=answer.detail,
        )
        out.setdefault(need.kernel_group.key, []).append(check)
    return {key: tuple(found_) for key, found_ in out.items()}


def _tolerate(spec: dict[str, Any], toleration: dict[str, str]) -> None:
    current = [t for t in spec.get("tolerations") or () if t != toleration]
    spec["tolerations"] = [*current, toleration]


def pin(
    state: desired.DesiredState, found: Mapping[str, tuple[observed.ImageCheck, ...]]
) -> desired.DesiredState:
    """``state`` with checked, existing images of kernel-affine workloads by digest, and
    those workloads tolerating the driver-missing taint (they are what takes it off)."""
    if not found:
        return state
    taint = images.driver_missing_taint(state.sr_name)
    toleration = {"key": taint.key, "operator": "Exists", "effect": taint.effect}
    objects = []
    for obj in state.objects:
        group = obj.kernel_group
        checks = found.get(group.key, ()) if group else ()
        if not checks or not podspec.runs_pods(obj.kind):
            objects.append(obj)
            continue
        digests = {c.image: c.digest for c in checks if c.exists} if pin_digest.pinned(obj) else {}
        new, body = base.edit(obj)
        spec = podspec.pod_spec(body) or {}
        for container in podspec.containers(spec):
            image = str(container.get("image") or "")
            if image in digests:
                container["image"] = digest_reference(image, digests[image])
        _tolerate(spec, toleration)
        objects.append(new)
    return dataclasses.replace(state, objects=tuple(objects))
