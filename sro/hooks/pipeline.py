"""The pure entry point: a SpecialResource, its recipe and the nodes -> its DesiredState.

``render_desired`` is what ``sro run`` applies and ``sro render`` prints, so the two can
never disagree. It selects the nodes, groups them by kernel, renders every document,
checks every annotation, runs the hooks in registry order and checks the result as a
whole (no object twice). Nothing is returned unless everything is valid: one bad
document makes the whole recipe fail before anything is written. The output is sorted
(state order, then kind, then identity) so equal inputs give equal outputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sro import errors
from sro.hooks import base, keys, per_node, registry
from sro.model import desired, kernels, recipe_policy, selection, views
from sro.model import specialresource as srmodel
from sro.render import engine, kinds, templates, values
from sro.render import problems as problems_
from sro.render import recipe as recipe_

# Apply order within a state: what others refer to first, workloads last.
_KIND_ORDER = {
    kind: rank
    for rank, group in enumerate(
        (
            ("Namespace", "CustomResourceDefinition", "PriorityClass"),
            ("ServiceAccount",),
            ("ClusterRole", "Role"),
            ("ClusterRoleBinding", "RoleBinding"),
            ("ConfigMap", "Secret"),
            ("Service",),
        )
    )
    for kind in group
}
_WORKLOAD_RANK = 8
_LIMITS = templates.Limits()


@dataclass(frozen=True, kw_only=True)
class Environment:
    """What a render needs besides the SpecialResource, its recipe and the nodes: the
    cluster's facts, the operator's settings, and the nodes a conflict keeps it off.

    ``sro run`` builds one from discovery and its settings, ``sro render`` and ``sro lint``
    from flags and the built-in kind tables; the render itself cannot tell them apart.
    """

    cluster_version: str
    operator: values.OperatorInfo
    proxy: values.ProxySettings
    is_namespaced: kinds.IsNamespaced
    is_served: kinds.IsServed
    limits: templates.Limits = _LIMITS
    policy: recipe_policy.RecipePolicy = recipe_policy.DEFAULT
    """What recipes may create (an administrator's choice; ``hooks.policy`` enforces it)."""
    keep_off: frozenset[str] = frozenset()
    """Nodes an earlier SpecialResource of the same recipe keeps (``sro.plan.conflicts``):
    never selected, and DaemonSets are kept off them (``hooks.keep_off``)."""


def render_desired(
    sr: srmodel.SpecialResource,
    recipe: recipe_.Recipe,
    nodes: Sequence[views.NodeView],
    *,
    env: Environment,
    last: desired.DesiredState | None = None,
) -> desired.DesiredState:
    """Everything ``sr`` wants on ``nodes``; raises the first RecipeError (others as notes).
    ``last``: the last render of ``sr``, whose unchanged per-node pods are taken again."""
    state, found = collect_desired(sr, recipe, nodes, env=env, last=last)
    found.raise_first()
    assert state is not None
    return state


def render_inputs(
    sr: srmodel.SpecialResource,
    recipe: recipe_.Recipe,
    nodes: Sequence[views.NodeView],
    *,
    env: Environment,
    facts: object = None,
) -> tuple[object, ...]:
    """What ``render_desired`` reads, as one comparable value: two calls with equal inputs
    render the same ``DesiredState``, so the engine renders again only when this changes.

    The nodes enter only as the selection and, per selected node, what its kernel group
    and group selector are computed from; their other labels (sro's own state labels
    above all, which change on every step of every node) do not, so a node advancing
    costs no render. The SpecialResource enters as its parsed spec plus its labels and
    annotations (templates may read them); its status does not (a template reading its
    own status would re-render on every status write). ``facts`` stands for what the
    cluster serves (``env.is_served`` answers from it): a new discovery read is a new value.
    """
    meta = sr.body.get("metadata") or {}
    selector = selection.effective_selector(sr, recipe_default=recipe.node_selector)
    selected = selection.select(nodes, selector, excluding=env.keep_off)
    return (
        sr,
        tuple(sorted((meta.get("labels") or {}).items())),
        tuple(sorted((meta.get("annotations") or {}).items())),
        recipe,  # the same compiled recipe object until the recipe changes (compared by identity first)
        env,
        facts,
        tuple(
            (
                n.name,
                n.kernel,
                n.architecture,
                n.os_image,
                n.labels.get(views.OS_ID_LABEL),
                n.labels.get(views.OS_VERSION_LABEL),
            )
            for n in selected
        ),
    )


def collect_desired(
    sr: srmodel.SpecialResource,
    recipe: recipe_.Recipe,
    nodes: Sequence[views.NodeView],
    *,
    env: Environment,
    last: desired.DesiredState | None = None,
) -> tuple[desired.DesiredState | None, problems_.Problems]:
    """Like ``render_desired`` but returns every problem found instead of raising."""
    found = problems_.Problems(warnings=list(recipe.warnings))
    selector = selection.effective_selector(sr, recipe_default=recipe.node_selector)
    if not selector and any(t.effect == "NoExecute" for t in sr.spec.taints):
        # Every node of the cluster would evict every pod that does not tolerate it.
        found.add(
            srmodel.SpecialResourceInvalid(
                f"SpecialResource {sr.name}: a NoExecute taint on every node (the node selector "
                "is empty) would evict every pod of the cluster; select the accelerator nodes",
                location=errors.Location(file=f"SpecialResource {sr.name} spec.taints"),
            )
        )
    selected = selection.select(nodes, selector, excluding=env.keep_off)
    groups = kernels.group_nodes(selected)
    inputs = values.Inputs(
        sr=sr,
        recipe_name=recipe.name,
        set_values=values.merge(dict(recipe.defaults), dict(sr.spec.set)),
        node_selector=selector,
        cluster=values.ClusterInfo(version=env.cluster_version),
        operator=env.operator,
        proxy=env.proxy,
    )
    if not _values_valid(sr, recipe, inputs.set_values, found):
        return None, found  # templates would only fail again on the same values
    if last is not None and last.sr_name != sr.name:
        last = None  # another SpecialResource's render: nothing of it is taken
    memo = last.documents if last is not None and isinstance(last.documents, engine.Memo) else None
    objects, documents = engine.render_documents(
        recipe, inputs, groups=groups.values(), limits=env.limits, problems=found, memo=memo
    )
    ctx = base.Context(
        sr=sr,
        recipe=recipe,
        node_selector=selector,
        nodes=selected,
        groups=groups,
        proxy=env.proxy,
        is_namespaced=env.is_namespaced,
        is_served=env.is_served,
        problems=found,
        texts={d.location: d.text for s in recipe.states for d in s.documents},
        keep_off=env.keep_off,
        policy=env.policy,
        last=last.objects if last is not None else (),
    )
    objects = [o for o in objects if keys.validate(o, registry.HOOKS, ctx=ctx)]
    for hook in registry.HOOKS:
        objects = hook.apply(objects, ctx)
    objects = per_node.expand(objects, ctx)
    _check_unique(objects, ctx)
    if found:
        return None, found
    order = {s.name: i for i, s in enumerate(recipe.states)}
    objects.sort(key=lambda o: (order[o.state], *_sort_key(o)))
    return desired.DesiredState(
        sr_name=sr.name,
        namespace=sr.spec.namespace,
        recipe=recipe.name,
        states=tuple(desired.StateSpec(name=s.name, after=s.after) for s in recipe.states),
        objects=tuple(objects),
        nodes=tuple(n.name for n in selected),
        kernel_groups=groups,
        warnings=tuple(found.warnings),
        documents=documents,
    ), found


def _values_valid(
    sr: srmodel.SpecialResource, recipe: recipe_.Recipe, merged: Mapping[str, Any], found: problems_.Problems
) -> bool:
    """Whether the merged ``set`` satisfies the recipe's values schema (true without one);
    each violation is a ``ValuesInvalid`` naming the SpecialResource and the key."""
    if recipe.values_schema is None:
        return True
    violations = recipe.values_schema.violations(merged)
    for bad in violations:
        if not _given(sr.spec.set, bad.path):
            key = f"set value {bad.dotted} (a default of recipe {recipe.name})"
        else:
            key = f"spec.set.{bad.dotted}" if bad.path else "spec.set"
        found.add(
            errors.ValuesInvalid(
                f"SpecialResource {sr.name}: {key}: {bad.message}",
                location=errors.Location(file=recipe.values_schema.file),
                sr=sr.name,
                path=bad.path,
            )
        )
    return not violations


def _given(values: Any, path: Sequence[str | int]) -> bool:
    """Whether ``path`` leads somewhere inside the SpecialResource's own ``spec.set``."""
    for part in path:
        inside = isinstance(values, Mapping) and part in values
        if not inside and not (isinstance(values, list) and isinstance(part, int) and part < len(values)):
            return False
        values = values[part]
    return True


def _sort_key(obj: desired.DesiredObject) -> tuple[int, str, str, str, str]:
    ref = obj.ref
    rank = _WORKLOAD_RANK if obj.kind in kinds.WORKLOADS else _KIND_ORDER.get(obj.kind, _WORKLOAD_RANK - 1)
    return rank, ref.api_version, ref.kind, ref.namespace, ref.name


def _check_unique(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> None:
    """The same object (apiVersion group, kind, namespace, name) may appear only once."""
    first: dict[tuple[str, str, str, str], desired.DesiredObject] = {}
    for obj in objects:
        ref = obj.ref
        key = (ref.group, ref.kind, ref.namespace, ref.name)
        if key in first:
            ctx.problems.add(
                errors.RecipeInvalid(
                    f"{ref} appears twice in the recipe (first at {ctx.locate(first[key], 'name:')})",
                    location=ctx.locate(obj, "name:"),
                )
            )
        else:
            first[key] = obj
