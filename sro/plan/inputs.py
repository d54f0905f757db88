"""Gathering one reconcile's inputs from the caches: selection, peers, observed state.

Pure functions over what the caches hand out (``NodeView``, ``PodView``, ``ObjectView``
and raw SpecialResource bodies), so the engine's I/O shell stays thin and these rules can
be read in one place:

* a node is *selected* when every label of the effective selector (the SpecialResource's
  ``nodeSelector``, or its recipe's default) matches, minus the nodes an earlier
  SpecialResource of the same recipe keeps (``conflicts``);
* a node has *departed* when it is not selected but still carries something of this
  SpecialResource: a ``<sr>.sro.dev/`` label, its kernel annotation or its taint record;
* the observed objects are the cached objects labelled ``sro.dev/owner: <sr>`` (minus
  controller-made pods), and the pods are the owned pods plus the pods in the operand
  namespace that belong to an owned DaemonSet.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from sro.cache import projections
from sro.errors import Location
from sro.model import desired, views
from sro.model import specialresource as sr_model
from sro.plan import conflicts, dependencies, lifecycle, node_patches
from sro.plan import observed as observed_

HOSTNAME_LABEL = "kubernetes.io/hostname"


def matches(node: views.NodeView, selector: Mapping[str, str]) -> bool:
    """Whether ``node`` carries every label of ``selector`` (an empty selector matches all)."""
    return all(node.labels.get(k) == v for k, v in selector.items())


def effective_selector(sr: sr_model.SpecialResource, recipe_selector: Mapping[str, str]) -> Mapping[str, str]:
    """The SpecialResource's ``nodeSelector`` when given, else its recipe's default."""
    return sr.spec.node_selector if sr.spec.node_selector is not None else recipe_selector


def select(nodes: Iterable[views.NodeView], selector: Mapping[str, str]) -> frozenset[str]:
    return frozenset(n.name for n in nodes if matches(n, selector))


@dataclass(frozen=True, kw_only=True)
class PeerSummary:
    """A SpecialResource as others see it: for dependency and conflict checks."""

    name: str
    recipe: str
    created: str
    dependencies: tuple[str, ...]
    nodes: frozenset[str]
    managed: bool


def summarise(
    sr: sr_model.SpecialResource, *, recipe_selector: Mapping[str, str], nodes: Iterable[views.NodeView]
) -> PeerSummary:
    return PeerSummary(
        name=sr.name,
        recipe=sr.spec.recipe,
        created=sr.creation_timestamp,
        dependencies=sr.spec.dependencies,
        nodes=select(nodes, effective_selector(sr, recipe_selector)),
        managed=sr.spec.management_state is sr_model.ManagementState.MANAGED and not sr.deleting,
    )


def dependency_report(name: str, peers: Iterable[PeerSummary]) -> dependencies.DependencyReport:
    table = {
        p.name: dependencies.Peer(name=p.name, dependencies=p.dependencies, nodes=p.nodes) for p in peers
    }
    return dependencies.check(name, table)


def conflict_report(name: str, peers: Iterable[PeerSummary]) -> conflicts.ConflictReport:
    """Conflicts among SpecialResources that actually run (Unmanaged/Removed/deleting ones claim nothing)."""
    claims = [
        conflicts.Claim(name=p.name, recipe=p.recipe, created=p.created, nodes=p.nodes)
        for p in peers
        if p.managed or p.name == name
    ]
    return conflicts.check(name, claims)


def departed(
    sr_name: str, nodes: Iterable[views.NodeView], *, selected: frozenset[str]
) -> tuple[views.NodeView, ...]:
    """Nodes outside the selection that still carry this SpecialResource's marks."""
    prefix = lifecycle.label_prefix(sr_name)
    marks = (lifecycle.kernel_annotation(sr_name), node_patches.taints_annotation(sr_name))
    return tuple(
        n
        for n in nodes
        if n.name not in selected
        and (any(k.startswith(prefix) for k in n.labels) or any(m in n.annotations for m in marks))
    )


def carrying(
    sr_name: str, nodes: Iterable[views.NodeView], taints: tuple[views.Taint, ...]
) -> tuple[views.NodeView, ...]:
    """Every node carrying a label, annotation or taint of this SpecialResource (for teardown)."""
    prefix = lifecycle.label_prefix(sr_name)
    marks = (lifecycle.kernel_annotation(sr_name), node_patches.taints_annotation(sr_name))
    mine = {(t.key, t.effect) for t in taints}
    return tuple(
        n
        for n in nodes
        if any(k.startswith(prefix) for k in n.labels)
        or any(m in n.annotations for m in marks)
        or any((t.key, t.effect) in mine for t in n.taints)
    )


def sr_taints(sr: sr_model.SpecialResource) -> tuple[views.Taint, ...]:
    return tuple(views.Taint(key=t.key, value=t.value, effect=t.effect) for t in sr.spec.taints)


def live_objects(owned: Iterable[projections.ObjectView]) -> Mapping[desired.ObjectRef, observed_.LiveObject]:
    """Owned objects as the planner reads them; pods made by a controller are not owned objects."""
    out: dict[desired.ObjectRef, observed_.LiveObject] = {}
    for view in owned:
        if view.ref.kind == "Pod" and _controller_kind(view.body) in observed_.POD_CONTROLLERS:
            continue
        out[view.ref] = observed_.LiveObject.from_body(view.body)
    return MappingProxyType(out)


def owned_pods(pods: Iterable[views.PodView], *, sr_name: str) -> tuple[views.PodView, ...]:
    """Bare pods this SpecialResource made (per-node pods): owner label, no controller."""
    return tuple(
        p
        for p in pods
        if p.labels.get(projections.OWNER_LABEL) == sr_name and p.owner_kind not in observed_.POD_CONTROLLERS
    )


def pod_objects(pods: Iterable[views.PodView]) -> Mapping[desired.ObjectRef, observed_.LiveObject]:
    """Owned bare pods as owned objects, so the planner can delete those no longer desired."""
    out: dict[desired.ObjectRef, observed_.LiveObject] = {}
    for p in pods:
        ref = desired.ObjectRef(api_version="v1", kind="Pod", namespace=p.namespace, name=p.name)
        out[ref] = observed_.LiveObject(ref=ref, uid=p.uid, phase=p.phase, deleting=p.deleting)
    return out


def relevant_pods(
    pods: Iterable[views.PodView], *, owned: Mapping[desired.ObjectRef, observed_.LiveObject], sr_name: str
) -> tuple[views.PodView, ...]:
    """Owned bare pods and the pods of owned DaemonSets, by owner uid (a recreated DaemonSet's
    old pods do not count for the new one)."""
    owner_uids = {live.uid for live in owned.values() if live.ref.kind == "DaemonSet"}
    pods = tuple(pods)
    bare = {(p.namespace, p.name) for p in owned_pods(pods, sr_name=sr_name)}
    return tuple(
        p
        for p in pods
        if (p.owner_kind == "DaemonSet" and p.owner_uid in owner_uids) or (p.namespace, p.name) in bare
    )


def _controller_kind(body: Mapping[str, Any]) -> str:
    for ref in (body.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("kind", ""))
    return ""


def with_priority_classes(wanted: desired.DesiredState, sr: sr_model.SpecialResource) -> desired.DesiredState:
    """``wanted`` plus the SpecialResource's ``spec.priorityClasses`` (soft partitioning).

    They belong to the first state, so they exist as soon as anything runs, and gate
    nothing; being desired objects, the planner deletes them like any other when they
    leave the spec, and teardown removes them with the rest.
    """
    if not sr.spec.priority_classes or not wanted.states:
        return wanted
    first = wanted.states[0].name
    extra = tuple(
        desired.DesiredObject(
            body={
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": pc.name, "labels": {projections.OWNER_LABEL: sr.name}},
                "value": pc.value,
                "globalDefault": False,
                **({"description": pc.description} if pc.description else {}),
            },
            state=first,
            source=Location(file=f"SpecialResource {sr.name} spec.priorityClasses[{i}]"),
            wait=False,
        )
        for i, pc in enumerate(sr.spec.priority_classes)
    )
    return dataclasses.replace(wanted, objects=(*extra, *wanted.objects))


def _without_nodes(pod_spec: Mapping[str, Any], names: list[str]) -> dict[str, Any]:
    """``pod_spec`` with a required ``kubernetes.io/hostname NotIn names`` in every node selector term.

    (A ``metadata.name`` field selector would be exact, but the API server allows only one
    value in it; the kubelet sets the hostname label to the node's name.)
    """
    keep_out = {"key": HOSTNAME_LABEL, "operator": "NotIn", "values": names}
    affinity = dict(pod_spec.get("affinity") or {})
    node_affinity = dict(affinity.get("nodeAffinity") or {})
    required = dict(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = [dict(t) for t in required.get("nodeSelectorTerms") or ()] or [{}]
    for term in terms:
        term["matchExpressions"] = [*(term.get("matchExpressions") or ()), keep_out]
    required["nodeSelectorTerms"] = terms
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    affinity["nodeAffinity"] = node_affinity
    return {**pod_spec, "affinity": affinity}


def excluding(wanted: desired.DesiredState, nodes: frozenset[str]) -> desired.DesiredState:
    """``wanted`` with its DaemonSets kept off ``nodes`` (nodes an earlier SpecialResource of
    the same recipe keeps): a DaemonSet places pods by labels, which say nothing of conflicts."""
    if not nodes:
        return wanted
    names = sorted(nodes)
    objects = []
    for obj in wanted.objects:
        spec = obj.body.get("spec")
        template = spec.get("template") if isinstance(spec, Mapping) else None
        if obj.kind != "DaemonSet" or not isinstance(spec, Mapping) or not isinstance(template, Mapping):
            objects.append(obj)
            continue
        pod_spec = _without_nodes(template.get("spec") or {}, names)
        body = {**obj.body, "spec": {**spec, "template": {**template, "spec": pod_spec}}}
        objects.append(dataclasses.replace(obj, body=body))
    return dataclasses.replace(wanted, objects=tuple(objects))
