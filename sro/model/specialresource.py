"""The SpecialResource custom resource, parsed and validated into a frozen value.

The API server's CEL rules already refuse most invalid objects, but the operator must
not trust that (an older CRD, a direct etcd write, ``sro lint`` on a file): every rule
of the CRD (docs/crd-reference.md) is checked again here, and a body that cannot be
processed raises ``SpecialResourceInvalid`` naming the SpecialResource, so the
caller reports that one object and goes on serving the others.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sro import errors
from sro.model import names, pod_security, preflight, upgrade_policy

GROUP = "sro.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "SpecialResource"
PLURAL = "specialresources"
OWNER_LABEL = f"{GROUP}/owner"
"""On every object sro makes, naming its SpecialResource: the owned watches' filter. Anyone
may set it: ownership is the controller owner reference, never the label."""
FINALIZER = "sro.dev/cleanup"

NAME_MAX = 40  # the name goes into label keys (<sr>.sro.dev/<state>) and object names
RESERVED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
MAX_DEPTH = 64  # deeper `set` values are refused rather than risk a RecursionError later
CUT = "<sro: nested too deeply>"
"""What ``sro.watch.decode`` leaves where an object nested past its depth was cut: a `set`
holding it was deeper than ``MAX_DEPTH`` as written, and is refused as such (never rendered
with the marker in place of the user's value)."""
PRIORITY_MAX = 1_000_000_000  # user-defined PriorityClass values must not exceed one billion
NODE_LOSS_GRACE_DEFAULT = 300  # an nfd-master restart on a large cluster re-labels within minutes
NODE_LOSS_GRACE_MAX = 86_400  # a day: longer would keep a node's stack after its hardware left


class SpecialResourceInvalid(errors.RecipeInvalid):
    """A SpecialResource body that cannot be processed; the message names it."""


class ManagementState(enum.StrEnum):
    MANAGED = "Managed"
    UNMANAGED = "Unmanaged"
    REMOVED = "Removed"


@dataclass(frozen=True, kw_only=True)
class TaintSpec:
    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def toleration(self) -> dict[str, str]:
        """The toleration that lets the operator's own workloads onto a tainted node."""
        if self.value:
            return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}
        return {"key": self.key, "operator": "Exists", "effect": self.effect}


@dataclass(frozen=True, kw_only=True)
class PriorityClassSpec:
    name: str
    value: int
    description: str = ""


@dataclass(frozen=True, kw_only=True)
class Spec:
    recipe: str
    namespace: str
    node_selector: Mapping[str, str] | None  # None: use the recipe's default
    set: Mapping[str, Any]
    dependencies: tuple[str, ...] = ()
    management_state: ManagementState = ManagementState.MANAGED
    node_loss_grace_seconds: int = NODE_LOSS_GRACE_DEFAULT
    taints: tuple[TaintSpec, ...] = ()
    priority_classes: tuple[PriorityClassSpec, ...] = ()
    pod_security: pod_security.Override = pod_security.NONE
    upgrade_policy: upgrade_policy.UpgradePolicy = upgrade_policy.DEFAULT
    preflight: preflight.Preflight = preflight.NONE


@dataclass(frozen=True, kw_only=True)
class SpecialResource:
    """One SpecialResource as the operator sees it; ``body`` is the object as read."""

    name: str
    uid: str
    generation: int
    deleting: bool
    finalizers: tuple[str, ...]
    creation_timestamp: str
    spec: Spec
    body: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return self.name

    def owner_reference(self) -> dict[str, Any]:
        """An ownerReference to this SpecialResource (cluster-scoped owners are valid for all)."""
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def state_label(self, state: str) -> str:
        """The node label set when ``state`` is complete on a node: ``<sr>.sro.dev/<state>``."""
        return f"{self.name}.{GROUP}/{state}"


def state_label(sr_name: str, state: str) -> str:
    return f"{sr_name}.{GROUP}/{state}"


def complete_label(sr_name: str) -> str:
    return state_label(sr_name, "complete")


def parse(body: Mapping[str, Any], *, location: errors.Location | None = None) -> SpecialResource:
    """Validate a SpecialResource body and return its value; raise ``SpecialResourceInvalid``."""
    if not isinstance(body, Mapping):
        raise SpecialResourceInvalid("a SpecialResource must be a mapping", location=location)
    meta = body.get("metadata") or {}
    name = str(meta.get("name", "")) if isinstance(meta, Mapping) else ""
    problems = _Problems(name or "<unnamed>", location)
    try:
        return _parse(body, meta, name, problems)
    except RecursionError:
        raise problems.error("the object is nested too deeply to process") from None


class _Problems:
    """Collects every problem so one message lists them all."""

    def __init__(self, name: str, location: errors.Location | None) -> None:
        self.name = name
        self.location = location
        self.items: list[str] = []

    def add(self, message: str) -> None:
        self.items.append(message)

    def error(self, message: str | None = None) -> SpecialResourceInvalid:
        text = message or "; ".join(self.items)
        return SpecialResourceInvalid(f"SpecialResource {self.name}: {text}", location=self.location)


def _parse(body: Mapping[str, Any], meta: Any, name: str, p: _Problems) -> SpecialResource:
    if body.get("apiVersion", API_VERSION) != API_VERSION or body.get("kind", KIND) != KIND:
        p.add(f"expected apiVersion {API_VERSION} and kind {KIND}")
    if not isinstance(meta, Mapping):
        raise p.error("metadata must be a mapping")
    if not names.is_dns_label(name, max_length=NAME_MAX):
        p.add(f"metadata.name {name!r} must be a DNS label of at most {NAME_MAX} characters")
    spec = body.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise p.error("spec must be a mapping")
    unknown = set(spec) - {
        "recipe",
        "namespace",
        "nodeSelector",
        "set",
        "dependencies",
        "managementState",
        "nodeLossGracePeriodSeconds",
        "taints",
        "priorityClasses",
        "podSecurity",
        "upgradePolicy",
        "preflight",
    }
    if unknown:
        p.add(f"unknown spec fields {sorted(unknown)}")

    recipe = str(spec.get("recipe") or name)
    if not names.is_dns_label(recipe):
        p.add(f"spec.recipe {recipe!r} must be a recipe name (a DNS label), never a path")
    namespace = str(spec.get("namespace") or name)
    if not names.is_dns_label(namespace):
        p.add(f"spec.namespace {namespace!r} must be a DNS label")
    elif namespace in RESERVED_NAMESPACES:
        p.add(f"spec.namespace {namespace!r} is reserved")

    selector = _node_selector(spec.get("nodeSelector"), p)
    set_values = spec.get("set") or {}
    if not isinstance(set_values, Mapping):
        p.add("spec.set must be a mapping")
        set_values = {}
    elif _depth(set_values) > MAX_DEPTH:
        raise p.error(f"spec.set is nested deeper than {MAX_DEPTH} levels")
    elif problem := key_problem(set_values, at="spec.set"):
        p.add(problem)

    deps = _dependencies(spec.get("dependencies"), name, p)
    state_text = str(spec.get("managementState") or ManagementState.MANAGED.value)
    try:
        management = ManagementState(state_text)
    except ValueError:
        p.add(f"spec.managementState {state_text!r} must be one of Managed, Unmanaged, Removed")
        management = ManagementState.MANAGED
    grace = _grace(spec.get("nodeLossGracePeriodSeconds"), p)
    taints = _taints(spec.get("taints"), p)
    priorities = _priority_classes(spec.get("priorityClasses"), p)
    security = pod_security.parse(spec.get("podSecurity"), p.items)
    upgrades = upgrade_policy.parse(spec.get("upgradePolicy"), p.items)
    expected = preflight.parse(spec.get("preflight"), p.items)
    if p.items:
        raise p.error()
    return SpecialResource(
        name=name,
        uid=str(meta.get("uid", "")),
        generation=int(meta.get("generation") or 0),
        deleting=bool(meta.get("deletionTimestamp")),
        finalizers=tuple(str(f) for f in meta.get("finalizers") or ()),
        creation_timestamp=str(meta.get("creationTimestamp", "")),
        spec=Spec(
            recipe=recipe,
            namespace=namespace,
            node_selector=selector,
            set=MappingProxyType(dict(set_values)),
            dependencies=deps,
            management_state=management,
            node_loss_grace_seconds=grace,
            taints=taints,
            priority_classes=priorities,
            pod_security=security,
            upgrade_policy=upgrades,
            preflight=expected,
        ),
        body=body,
    )


def _grace(raw: Any, p: _Problems) -> int:
    if raw is None:
        return NODE_LOSS_GRACE_DEFAULT
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= NODE_LOSS_GRACE_MAX:
        p.add(f"spec.nodeLossGracePeriodSeconds {raw!r} must be an integer from 0 to {NODE_LOSS_GRACE_MAX}")
        return NODE_LOSS_GRACE_DEFAULT
    return raw


def _depth(value: Any, level: int = 0) -> int:
    """Nesting depth of plain data, stopping early once past the limit."""
    if level > MAX_DEPTH or (isinstance(value, str) and value == CUT):
        return MAX_DEPTH + 1
    if isinstance(value, Mapping):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list | tuple):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def key_problem(value: Any, *, at: str) -> str | None:
    """The first mapping key in ``value`` that is not a string, said with its path, or None.

    Values travel as JSON (the API server stores nothing else), whose keys are strings; a
    YAML file may write ``1:`` or ``null:``, which no template can sort or look up alike.
    """
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{at}: key {key!r} must be a string (quote it)"
            if found := key_problem(item, at=f"{at}.{key}"):
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            if found := key_problem(item, at=f"{at}[{index}]"):
                return found
    return None


def _node_selector(value: Any, p: _Problems) -> Mapping[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        p.add("spec.nodeSelector must be a mapping of label keys to values")
        return None
    out: dict[str, str] = {}
    for key, val in value.items():
        key_s, val_s = str(key), str(val) if val is not None else ""
        if problem := names.label_key_problem(key_s):
            p.add(f"spec.nodeSelector key {key_s!r}: {problem}")
        if problem := names.label_value_problem(val_s):
            p.add(f"spec.nodeSelector[{key_s!r}] value {val_s!r}: {problem}")
        out[key_s] = val_s
    return MappingProxyType(out)


def _dependencies(value: Any, name: str, p: _Problems) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        p.add("spec.dependencies must be a list of {name: ...}")
        return ()
    deps: list[str] = []
    for i, dep in enumerate(value):
        dep_name = str(dep.get("name", "")) if isinstance(dep, Mapping) else ""
        if not names.is_dns_label(dep_name, max_length=NAME_MAX):
            p.add(f"spec.dependencies[{i}].name {dep_name!r} is not a SpecialResource name")
        elif dep_name == name:
            p.add("a SpecialResource cannot depend on itself")
        elif dep_name not in deps:
            deps.append(dep_name)
    return tuple(deps)


SYSTEM_TAINT_PREFIX = "node.kubernetes.io/"
"""Taints under this prefix are the node controller's and the kubelet's (``not-ready``,
``unreachable``, the pressure conditions, ``unschedulable``): sro would fight them over
each one, and a pass does not even wake for the readiness ones (``views.READINESS_TAINTS``)."""


def _taints(value: Any, p: _Problems) -> tuple[TaintSpec, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        p.add("spec.taints must be a list")
        return ()
    taints: list[TaintSpec] = []
    for i, taint in enumerate(value):
        if not isinstance(taint, Mapping):
            p.add(f"spec.taints[{i}] must be a mapping")
            continue
        key, val = str(taint.get("key", "")), str(taint.get("value") or "")
        effect = str(taint.get("effect") or "NoSchedule")
        if problem := names.label_key_problem(key):
            p.add(f"spec.taints[{i}].key {key!r}: {problem}")
        elif key.startswith(SYSTEM_TAINT_PREFIX):
            p.add(
                f"spec.taints[{i}].key {key!r}: {SYSTEM_TAINT_PREFIX} taints are set and removed by the "
                "node controller and the kubelet: choose a key of your own, such as nvidia.com/gpu"
            )
        if problem := names.label_value_problem(val):
            p.add(f"spec.taints[{i}].value {val!r}: {problem}")
        if effect not in TAINT_EFFECTS:
            p.add(f"spec.taints[{i}].effect {effect!r} must be one of {', '.join(TAINT_EFFECTS)}")
        taints.append(TaintSpec(key=key, value=val, effect=effect))
    return tuple(taints)


def _priority_classes(value: Any, p: _Problems) -> tuple[PriorityClassSpec, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        p.add("spec.priorityClasses must be a list")
        return ()
    out: list[PriorityClassSpec] = []
    for i, pc in enumerate(value):
        if not isinstance(pc, Mapping):
            p.add(f"spec.priorityClasses[{i}] must be a mapping")
            continue
        pc_name = str(pc.get("name", ""))
        if not names.is_dns_subdomain(pc_name):
            p.add(f"spec.priorityClasses[{i}].name {pc_name!r} must be a DNS subdomain")
        raw = pc.get("value", 0)
        if isinstance(raw, bool) or not isinstance(raw, int) or abs(raw) > PRIORITY_MAX:
            p.add(f"spec.priorityClasses[{i}].value must be an integer of at most {PRIORITY_MAX}")
            raw = 0
        out.append(PriorityClassSpec(name=pc_name, value=raw, description=str(pc.get("description") or "")))
    return tuple(out)
