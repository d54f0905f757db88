"""Every hook, in the order they run. Adding a hook is one module and one line here.

The order matters: the recipe policy sees what the recipe rendered, before anything
else; the SpecialResource's own PriorityClasses join next; then copies are
made (kernel groups, then nodes) so every later hook sees each kernel group's copy and
each per-node template's first pod (the other nodes' pods are stamped from it after the
last hook, ``per_node.expand``: a hook after per-node must treat every node's pod alike
and read nothing of its name, node label or ``nodeName``), and the driver
DaemonSets among them get the ``OnDelete`` strategy sro's upgrade walk needs; unserved optional
kinds are dropped before scope is looked up; placement comes after ownership so it sees
final names and namespaces, and keep-off after placement, whose node affinity it extends;
the wait flags come last.
"""

from __future__ import annotations

from sro.hooks import (
    base,
    builds,
    keep_off,
    kernel_affine,
    optional,
    ownership,
    per_node,
    pin_digest,
    placement,
    policy,
    priority_classes,
    proxy,
    upgrade,
    wait,
    wait_for_logs,
)

HOOKS: tuple[base.Hook, ...] = (
    base.Hook(name="policy", apply=policy.apply),
    base.Hook(name="priority-classes", apply=priority_classes.apply),
    base.Hook(name="kernel-affine", annotation=kernel_affine.ANNOTATION, apply=kernel_affine.apply),
    base.Hook(name="upgrade", annotation=upgrade.ANNOTATION, apply=upgrade.apply),
    base.Hook(name="per-node", annotation=per_node.ANNOTATION, apply=per_node.apply),
    base.Hook(name="optional", annotation=optional.ANNOTATION, apply=optional.apply),
    base.Hook(name="ownership", apply=ownership.apply),
    base.Hook(name="placement", apply=placement.apply),
    base.Hook(name="keep-off", apply=keep_off.apply),
    base.Hook(name="proxy", annotation=proxy.ANNOTATION, apply=proxy.apply),
    base.Hook(name="builds", annotation=builds.ANNOTATION, apply=builds.apply, check=builds.check),
    base.Hook(
        name="build-from", annotation=builds.FROM_ANNOTATION, apply=builds.keep, check=builds.check_from
    ),
    base.Hook(name="pin-digest", annotation=pin_digest.ANNOTATION, apply=pin_digest.apply),
    base.Hook(name="wait", annotation=wait.ANNOTATION, apply=wait.apply),
    base.Hook(
        name="wait-for-logs",
        annotation=wait_for_logs.ANNOTATION,
        apply=wait_for_logs.apply,
        check=wait_for_logs.check,
    ),
)
