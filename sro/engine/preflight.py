"""``spec.preflight``: rendering and checking the kernels a SpecialResource expects.

For each expected kernel (on its OS, or on each OS among the selected nodes) this renders
the recipe for a synthetic node of that group, exactly as ``sro preflight`` does and with
the environment the pass renders with, then asks the registry about that render's
per-kernel images through the same ``ImageChecks`` (its cache serves every pass, so a
steady state sends nothing). The render runs off the event loop and is reused while its
inputs hold. Nothing here decides: ``sro.plan.preflight`` turns the answers into status
rows and, when asked, into builds ahead of the nodes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import structlog

from sro import errors
from sro.engine import compute, ports
from sro.hooks import builds, pipeline
from sro.images import needs
from sro.model import kernels, names, selection, views
from sro.model import specialresource as sr_model
from sro.plan import observed
from sro.render import recipe as recipe_

log = structlog.get_logger(__name__)

DEFAULT_ARCH = "amd64"


def nodes_for(
    sr: sr_model.SpecialResource, recipe: recipe_.Recipe, selected: Sequence[views.NodeView]
) -> list[views.NodeView]:
    """One synthetic node per expected kernel and OS (the OSes of ``selected`` where the
    entry names none), on the architecture most selected nodes have."""
    selector = selection.effective_selector(sr, recipe_default=recipe.node_selector)
    arch = Counter(n.architecture for n in selected if n.architecture).most_common(1)
    oses = sorted({kernels.node_os(n) for n in selected}, key=lambda o: o.tag)
    chosen = arch[0][0] if arch else DEFAULT_ARCH
    out = []
    for entry in sr.spec.preflight.kernels:
        for os in [entry.os] if entry.os is not None else oses:
            name = names.suffixed("preflight", os.tag, identity=f"{entry.kernel}|{os.tag}")
            node = needs.synthetic_node(kernel=entry.kernel, os=os, selector=selector, arch=chosen, name=name)
            out.append(node)
    return out


async def check(
    sr: sr_model.SpecialResource,
    recipe: recipe_.Recipe,
    *,
    selected: Sequence[views.NodeView],
    env: pipeline.Environment,
    facts: object,
    images: ports.Images,
    last: compute.Rendered | None,
) -> tuple[observed.Preflight, compute.Rendered | None]:
    """The expected kernels, rendered and checked, and the render to reuse next time."""
    if not sr.spec.preflight.kernels:
        return observed.NO_PREFLIGHT, None
    synthetic = nodes_for(sr, recipe, selected)
    if not synthetic:
        return observed.NO_PREFLIGHT, None
    try:
        rendered = await compute.render(sr, recipe, synthetic, env=env, facts=facts, last=last)
    except errors.RecipeError as exc:  # a kernel to come must not stop the nodes of today
        log.warning("expected kernels not rendered", sr=sr.name, error=str(exc))
        return observed.NO_PREFLIGHT, None
    checked = await images.check(rendered.state)
    state = checked.state
    return (
        observed.Preflight(
            groups=tuple(dict.fromkeys(state.kernel_groups.values())),
            images=checked.images,
            builds=tuple(o for o in state.objects if builds.is_build(o)),
            build=sr.spec.preflight.build,
        ),
        rendered,
    )
