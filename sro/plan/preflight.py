"""``spec.preflight``: answers for kernels the nodes will boot, before they do.

The engine renders the recipe for each expected kernel as if a node of the selected
OSes ran it (``sro.images.needs.synthetic_node``, what ``sro preflight`` renders), asks
the registry about the per-kernel images of that render, and hands the answers over as
``Observed.preflight``. This module turns them into ``status.preflight`` (one row per
kernel and OS: each image and its answer; ``ready`` when every one exists) and, with
``spec.preflight.build``, into build specs for the groups no selected node runs yet
(``sro.plan.builds`` decides about them as about a node's group; their Jobs run on a
node of the same OS, since none runs that kernel). A group that nodes already run is
left to their own build, so one image is never built twice from two places.
"""

from __future__ import annotations

import dataclasses

from sro.hooks import builds as builds_hook
from sro.model import crd_limits, desired
from sro.plan import builds
from sro.plan import observed as observed_
from sro.status.body import PreflightImage, PreflightRow, StatusBody


def rows(expected: observed_.Preflight) -> list[PreflightRow]:
    """``status.preflight``: each expected group's checked images (build Jobs' own aside)."""
    states = builds_hook.build_states(expected.builds)
    out: list[PreflightRow] = []
    for group in sorted(set(expected.groups), key=lambda g: (g.kernel, g.os.tag))[: crd_limits.PREFLIGHT_MAX]:
        checks = [c for c in expected.images.get(group.key, ()) if c.state not in states]
        images: list[PreflightImage] = []
        for check in checks[: crd_limits.PREFLIGHT_IMAGES_MAX]:
            image: PreflightImage = {
                "image": check.image[: crd_limits.KERNEL_IMAGE_MAX],
                "state": check.state[: crd_limits.STATE_REF_MAX],
                "result": check.outcome[: crd_limits.RESULT_MAX],
            }
            if check.digest:
                image["digest"] = check.digest[: crd_limits.KERNEL_DIGEST_MAX]
            images.append(image)
        out.append(
            {
                "kernel": group.kernel[: crd_limits.PREFLIGHT_KERNEL_MAX],
                "os": group.os.tag[: crd_limits.OS_MAX],
                "ready": all(c.exists for c in checks),
                "images": images,
            }
        )
    return out


def with_rows(status: StatusBody, expected: observed_.Preflight) -> StatusBody:
    """``status`` with ``status.preflight`` when kernels are expected (none: no field)."""
    if not expected.groups:
        return status
    return {**status, "preflight": rows(expected)}


def ahead(expected: observed_.Preflight, wanted: desired.DesiredState) -> builds.Split:
    """The builds of expected groups no selected node runs, when asked to build ahead."""
    running = {g.key for g in wanted.kernel_groups.values()}
    chosen = [o for o in expected.builds if o.kernel_group is not None and o.kernel_group.key not in running]
    if not expected.build or not chosen:
        return builds.Split(wanted=wanted, seen=observed_.Observed(generation=0, nodes={}))
    return builds.Split(
        wanted=wanted,
        seen=observed_.Observed(generation=0, nodes={}),
        specs=builds.specs_of(chosen, checks=expected.images, ahead=True),
    )


def seen_for(seen: observed_.Observed, expected: observed_.Preflight) -> observed_.Observed:
    """``seen`` answering with the expected groups' images (what ``builds.decide`` reads)."""
    return dataclasses.replace(seen, images=expected.images)
