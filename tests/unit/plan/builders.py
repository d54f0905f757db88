"""Small builders of planner inputs, and ``World``: a plain in-memory stand-in for what the
cluster does between reconciles (schedules DaemonSet pods where the node labels allow,
runs per-node pods), so a test can step the planner the way the engine will, and
``linear_world``: the three-node world (driver, per-node validation, device plugin) that
the ``test_plan*`` modules step alike.

Only pure planner tests use these; nothing here talks to an API server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sro.errors import Location
from sro.model import desired, logpattern, views
from sro.plan import actions, lifecycle, live_records, observed, planner

SR = "gpu"
NS = "gpu-ns"
T0 = datetime(2026, 11, 22, 6, 0, 0, tzinfo=UTC)

RHEL = desired.OsRelease(id="rhel", version_id="9.4")
K1 = desired.KernelGroup(kernel="5.14.0-427.13.1.el9_4.x86_64", os=RHEL)
K2 = desired.KernelGroup(kernel="5.14.0-503.11.1.el9_5.x86_64", os=RHEL)


def body(kind: str, name: str, *, api_version: str = "", namespace: str = NS, **extra: Any) -> dict[str, Any]:
    versions = {"DaemonSet": "apps/v1", "Deployment": "apps/v1", "StatefulSet": "apps/v1", "Job": "batch/v1"}
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api_version or versions.get(kind, "v1"), "kind": kind, "metadata": meta, **extra}


def obj(
    kind: str,
    name: str,
    state: str,
    *,
    namespace: str = NS,
    api_version: str = "",
    group: desired.KernelGroup | None = None,
    node: str | None = None,
    wait: bool = True,
    logs: str | None = None,
) -> desired.DesiredObject:
    return desired.DesiredObject(
        body=body(kind, name, api_version=api_version, namespace=namespace),
        state=state,
        source=Location(file=f"{state}/{name}.yaml", line=1),
        kernel_group=group,
        node=node,
        wait=wait,
        wait_for_logs=logpattern.compile_pattern(logs) if logs else None,
    )


def ds(name: str, state: str, **kw: Any) -> desired.DesiredObject:
    return obj("DaemonSet", name, state, **kw)


def node_pods(name: str, state: str, nodes: Iterable[str], **kw: Any) -> list[desired.DesiredObject]:
    """One per-node Pod per node, named as the per-node hook would."""
    return [obj("Pod", f"{name}-{n}", state, node=n, **kw) for n in nodes]


def states(*specs: str | tuple[str, Sequence[str]]) -> tuple[desired.StateSpec, ...]:
    """States in order; a bare name comes after the previous state, a pair names its after."""
    out: list[desired.StateSpec] = []
    for spec in specs:
        if isinstance(spec, str):
            after = (out[-1].name,) if out else ()
            out.append(desired.StateSpec(name=spec, after=after))
        else:
            out.append(desired.StateSpec(name=spec[0], after=tuple(spec[1])))
    return tuple(out)


def wanted(
    state_specs: tuple[desired.StateSpec, ...],
    objects: Iterable[desired.DesiredObject],
    nodes: Iterable[str],
    *,
    groups: Mapping[str, desired.KernelGroup] | None = None,
) -> desired.DesiredState:
    names = tuple(sorted(nodes))
    return desired.DesiredState(
        sr_name=SR,
        namespace=NS,
        recipe="nvidia-gpu",
        states=state_specs,
        objects=tuple(objects),
        nodes=names,
        kernel_groups=dict(groups) if groups is not None else dict.fromkeys(names, K1),
    )


def node(name: str, labels: Mapping[str, str] | None = None, **kw: Any) -> views.NodeView:
    return views.NodeView(name=name, labels=dict(labels or {}), ready=True, **kw)


def live(o: desired.DesiredObject, **kw: Any) -> live_records.LiveObject:
    kw.setdefault("uid", f"uid-{o.ref.name}")
    kw.setdefault("generation", 1)
    kw.setdefault("template_generation", kw["generation"])
    return live_records.LiveObject(ref=o.ref, **kw)


def container(name: str = "main", **kw: Any) -> views.ContainerState:
    return views.ContainerState(name=name, **kw)


def ds_pod(
    d: desired.DesiredObject, on: str, *, ready: bool = True, generation: int = 1, uid: str = "", **kw: Any
) -> views.PodView:
    kw.setdefault("containers", (container(ready=ready),))
    return views.PodView(
        namespace=d.ref.namespace,
        name=f"{d.ref.name}-{on}",
        uid=uid or f"pod-{d.ref.name}-{on}-{generation}",
        node=on,
        phase="Running",
        ready=ready,
        labels={"pod-template-generation": str(generation)},
        owner_kind="DaemonSet",
        owner_name=d.ref.name,
        owner_uid=f"uid-{d.ref.name}",
        **kw,
    )


def bare_pod(
    p: desired.DesiredObject, *, phase: str = "Succeeded", uid: str = "", **kw: Any
) -> views.PodView:
    return views.PodView(
        namespace=p.ref.namespace,
        name=p.ref.name,
        uid=uid or f"pod-{p.ref.name}",
        node=p.node or "",
        phase=phase,
        owner_kind="SpecialResource",
        owner_name=SR,
        **kw,
    )


def replica_pod(
    d: desired.DesiredObject, on: str, *, ready: bool = True, ready_withdrawn: bool = False, **kw: Any
) -> views.PodView:
    """A pod of Deployment ``d``'s ReplicaSet (or of StatefulSet ``d``, whose uid ``live`` gives)."""
    template_hash = "5d8f7c9b4"
    kw.setdefault("containers", (container(ready=ready or ready_withdrawn),))
    kw.setdefault("phase", "Running")
    replicas = d.kind == "Deployment"
    return views.PodView(
        namespace=d.ref.namespace,
        name=f"{d.ref.name}-{template_hash}-{on}" if replicas else f"{d.ref.name}-0",
        uid=f"pod-{d.ref.name}-{on}",
        node=on,
        ready=ready,
        ready_withdrawn=ready_withdrawn,
        labels={"pod-template-hash": template_hash} if replicas else {},
        owner_kind="ReplicaSet" if replicas else d.kind,
        owner_name=f"{d.ref.name}-{template_hash}" if replicas else d.ref.name,
        owner_uid=f"uid-rs-{d.ref.name}" if replicas else f"uid-{d.ref.name}",
        **kw,
    )


def failed_pod(p: desired.DesiredObject, *, uid: str = "", exit_code: int = 1) -> views.PodView:
    c = container(terminated_reason="Error", exit_code=exit_code)
    return bare_pod(p, phase="Failed", uid=uid, containers=(c,))


def seen(
    nodes: Iterable[views.NodeView],
    *,
    objects: Iterable[live_records.LiveObject] = (),
    pods: Iterable[views.PodView] = (),
    **kw: Any,
) -> observed.Observed:
    kw.setdefault("generation", 1)
    return observed.Observed(
        nodes={n.name: n for n in nodes},
        objects={o.ref: o for o in objects},
        pods=tuple(pods),
        **kw,
    )


def label(state: str) -> str:
    return lifecycle.state_label(SR, state)


def labels_of(p: actions.Plan) -> dict[str, dict[str, str | None]]:
    return {c.node: dict(c.labels) for c in p.node_labels}


@dataclass
class World:
    """An in-memory cluster the tests step: ``step()`` plans, then carries the plan out.

    DaemonSet pods appear (Ready) on a node once the node carries the labels of every
    ``after`` state of the DaemonSet's state and its kernel group matches — what the
    injected node affinity and kernel selector make the scheduler do. Per-node pods run to
    the phase ``pod_outcome`` gives (Succeeded by default).
    """

    desired: desired.DesiredState
    nodes: dict[str, views.NodeView]
    objects: dict[desired.ObjectRef, live_records.LiveObject] = field(default_factory=dict)
    pods: dict[tuple[str, str], views.PodView] = field(default_factory=dict)
    status: Mapping[str, Any] = field(default_factory=dict)
    retries: Mapping[desired.ObjectRef, observed.Retry] = field(default_factory=dict)
    now: datetime = T0
    pod_outcome: dict[str, str] = field(default_factory=dict)  # pod name -> phase
    last: actions.Plan | None = None
    created: list[desired.ObjectRef] = field(default_factory=list)
    node_answers: dict[str, observed.NodeAnswer] = field(default_factory=dict)  # sro's node patches
    finished: frozenset[desired.ObjectRef] = frozenset()  # pods that succeeded and went since the last step
    workload_pods: dict[tuple[str, str], views.PodView] = field(
        default_factory=dict
    )  # Deployments' and the like
    lagging: frozenset[tuple[str, str]] = frozenset()  # caches behind sro's own writes

    def observe(self) -> observed.Observed:
        return observed.Observed(
            generation=1,
            nodes={n: self.nodes[n] for n in self.desired.nodes},
            departed=tuple(v for k, v in sorted(self.nodes.items()) if k not in self.desired.nodes),
            objects=dict(self.objects),
            pods=tuple(self.pods.values()),
            previous_status=self.status,
            retries=self.retries,
            node_answers=self.node_answers,
            finished=self.finished,
            workload_pods=tuple(self.workload_pods.values()),
            lagging=self.lagging,
        )

    def step(self) -> actions.Plan:
        p = planner.plan(self.desired, self.observe(), now=self.now)
        for d in p.delete:
            self.objects.pop(d.ref, None)
            self.pods.pop((d.ref.namespace, d.ref.name), None)
        for change in p.node_labels:
            n = self.nodes[change.node]
            labels = {k: v for k, v in {**n.labels, **change.labels}.items() if v is not None}
            notes = {k: v for k, v in {**n.annotations, **change.annotations}.items() if v is not None}
            self.nodes[change.node] = replace(n, labels=labels, annotations=notes)
        for o in p.apply:
            if o.ref not in self.objects:
                self.created.append(o.ref)
                # Deployments and the like come up at once; DaemonSets get pods in schedule().
                self.objects[o.ref] = live(o, observed_generation=1, available_replicas=1, ready_replicas=1)
            if o.kind == "Pod" and (o.ref.namespace, o.ref.name) not in self.pods:
                phase = self.pod_outcome.get(o.ref.name, "Succeeded")
                uid = f"pod-{o.ref.name}-{self.created.count(o.ref) + len(self.pods)}"
                made = failed_pod(o, uid=uid) if phase == "Failed" else bare_pod(o, phase=phase, uid=uid)
                self.pods[(o.ref.namespace, o.ref.name)] = made
        self.status, self.retries, self.last = p.status, p.retries, p
        self.schedule()
        return p

    def schedule(self) -> None:
        """Put a Ready pod of every existing DaemonSet on each node it may run on."""
        after = {s.name: s.after for s in self.desired.states}
        for o in self.desired.objects:
            if o.kind != "DaemonSet" or o.ref not in self.objects:
                continue
            for name in self.desired.nodes:
                n = self.nodes[name]
                allowed = all(n.labels.get(label(a)) == "ready" for a in after[o.state])
                fits = o.kernel_group is None or o.kernel_group == self.desired.kernel_groups[name]
                key = (o.ref.namespace, f"{o.ref.name}-{name}")
                if allowed and fits:
                    self.pods.setdefault(key, ds_pod(o, name))
                else:
                    self.pods.pop(key, None)

    def settle(self, *, limit: int = 30) -> int:
        """Step until a plan changes nothing on nodes or objects; returns the steps taken."""
        for count in range(1, limit + 1):
            before = (dict(self.nodes), set(self.objects), set(self.pods))
            self.step()
            if (dict(self.nodes), set(self.objects), set(self.pods)) == before:
                return count
        raise AssertionError(f"no fixed point in {limit} steps")

    def later(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    def complete_states(self, name: str) -> set[str]:
        prefix = lifecycle.label_prefix(SR)
        return {
            k[len(prefix) :]
            for k, v in self.nodes[name].labels.items()
            if k.startswith(prefix) and v == "ready"
        }


# The three-node world most plan tests step: a driver, a per-node validation, a device plugin.

NODES = ("n1", "n2", "n3")
LINEAR = states("state-driver", "state-validation", "state-device-plugin")


def gpu_objects(nodes: tuple[str, ...] = NODES, *, driver: list[desired.DesiredObject] | None = None) -> list:
    return [
        *(driver or [ds("driver", "state-driver")]),
        *node_pods("validate", "state-validation", nodes),
        ds("plugin", "state-device-plugin"),
    ]


def linear_world(**kw: Any) -> World:
    return World(desired=wanted(LINEAR, gpu_objects(), NODES), nodes={n: node(n) for n in NODES}, **kw)


def _collected(world: World, name: str) -> None:
    """What the pod garbage collector does to a finished pod."""
    ref = obj("Pod", name, "s").ref
    world.pods.pop((ref.namespace, ref.name))
    world.objects.pop(ref, None)
