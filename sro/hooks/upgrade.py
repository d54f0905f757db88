"""``sro.dev/upgrade``: whose DaemonSet pods sro replaces, node by node, instead of the
DaemonSet controller.

Replacing a driver's pod unloads the driver under whatever runs on the node, so the pods
of a driver DaemonSet must change only when sro has cordoned and drained the node
(``sro.plan.upgrade``). The DaemonSet controller does that for no one: a DaemonSet with
the ``OnDelete`` strategy leaves its pods alone until someone deletes them, and sro is
that someone. This hook gives ``updateStrategy: {type: OnDelete}`` to every DaemonSet

* rendered per kernel group (``sro.dev/kernel-affine: "true"``: a kernel module), or
* marked ``sro.dev/upgrade: "true"`` (a driver that is not built per kernel),

unless it is marked ``sro.dev/upgrade: "false"`` (a kernel-affine DaemonSet whose pods
may restart at any time, such as a per-kernel exporter). Every other DaemonSet keeps the
strategy its recipe wrote, ``RollingUpdate`` when it wrote none. The whole
``updateStrategy`` is replaced: the API server refuses ``rollingUpdate`` parameters
beside ``OnDelete``.
"""

from __future__ import annotations

from collections.abc import Sequence

from sro.hooks import base, keys
from sro.model import desired

ANNOTATION = "upgrade"
ON_DELETE = "OnDelete"


def managed(obj: desired.DesiredObject) -> bool:
    """Whether sro, not the DaemonSet controller, replaces the pods of ``obj``."""
    if obj.kind != "DaemonSet":
        return False
    return keys.flag(obj, ANNOTATION, default=obj.kernel_group is not None)


def apply(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    out: list[desired.DesiredObject] = []
    for obj in objects:
        spec = obj.body.get("spec")
        if (
            not managed(obj)
            or not isinstance(spec, dict)
            or spec.get("updateStrategy") == {"type": ON_DELETE}
        ):
            out.append(obj)
            continue
        new, body = base.edit(obj)
        base.sub(body, "spec")["updateStrategy"] = {"type": ON_DELETE}
        out.append(new)
    return out
