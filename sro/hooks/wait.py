"""``sro.dev/wait``: whether a state waits for an object's readiness.

Every workload (DaemonSet, Deployment, StatefulSet, Job, Pod) is waited on unless marked
``"false"``; any other kind is waited on only when marked ``"true"``, by its own readiness
rule (a CRD until Established, a Namespace until Active, anything else until it exists).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sro.hooks import base, keys
from sro.model import desired
from sro.render import kinds

ANNOTATION = "wait"


def apply(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    return [
        dataclasses.replace(obj, wait=keys.flag(obj, ANNOTATION, default=obj.kind in kinds.WORKLOADS))
        for obj in objects
    ]
