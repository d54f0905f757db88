"""In-cluster builds: when a kernel group's image is missing, run the recipe's build Job.

A recipe may hold a *build state* (``sro.hooks.builds``): a kernel-affine Job annotated
``sro.dev/builds: <image>``. It is never walked on nodes; this module decides, per
kernel group, whether its Job runs, from what the registry said (``Observed.images``)
and the Jobs the cluster has. Everything is read from the cluster each pass (the Job's
name carries the build's inputs and the attempt), so a restart loses nothing but one
fresh look at the registry.

* **When.** A group's Job runs when the image it produces is *missing* (not when the
  registry cannot be asked: that is patience, not a build), and again when the build's
  *inputs* change while a Job of that group exists (the image was built here before).
  A prebuilt image that exists is used as it is, and never rebuilt.
* **Inputs.** A digest of the rendered Job: the recipe's files of that state, the
  ``set`` values and kernel values it reads, and its container images by digest when
  their registry is checked (the builder's base image). The Job is named
  ``<name>-<inputs>-<attempt>``, so a change makes exactly one new Job, and the old
  one is deleted as no longer desired.
* **Success.** When the Job completes and the image was still missing, the planner asks
  the engine to forget that answer (``recheck``) and look again at once; the group then
  proceeds as with any image that exists. Complete, yet still missing after that look:
  the build is failed.
* **Unknown inputs.** While the registry of the Job's own images (its builder) cannot
  be asked, their digests are unknown: the group's Jobs are left as they are and none is
  made (a registry outage must not look like new inputs). A builder image that does not
  exist is ``BuildFailed`` at once: no Job could run.
* **Failure.** ``Degraded`` with ``BuildFailed``, the Job's condition and the tail of
  its pod's log in the message; a new attempt after ``backoff(attempt)`` (exponential,
  bounded), counted from when the Job failed. The failed Job stays until then: its pod
  holds the log.

The driver-missing taint is on the group's nodes meanwhile, so build Jobs tolerate it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sro.hooks import base, builds, podspec
from sro.model import desired, names, progress, times, views
from sro.plan import images, live_records, readiness
from sro.plan import observed as observed_
from sro.status import conditions, summary
from sro.status.body import StatusBody

INPUTS_LABEL = "sro.dev/build-inputs"
INPUTS_LENGTH = 8
PREFIX_MAX = 47
"""A Job's name is ``<prefix>-<8 hex>-<attempt>``; a Job's pods get its name as a label,
whose values are at most 63 characters."""
RETRY_BASE = timedelta(seconds=30)
RETRY_MAX = timedelta(minutes=10)
LOG_LINES = 12
"""Lines of the build's log tail a failure message carries (the condition's message is
bounded by the CRD; the tail is cut to fit)."""
LOG_CHARS = 1200
LOG_SOON = timedelta(seconds=1)
"""How soon to look again after asking for a failed build's log tail."""
_NEVER = r"[^\s\S]"
"""A pattern no line matches: the whole tail is kept (``readiness.condense``)."""


@dataclass(frozen=True, kw_only=True)
class Spec:
    """One kernel group's build Job, as rendered."""

    group: desired.KernelGroup
    image: str
    obj: desired.DesiredObject
    inputs: str
    prefix: str
    ahead: bool = False
    """For a kernel of ``spec.preflight`` no node runs yet: built on a node of its OS."""

    def name(self, attempt: int) -> str:
        return f"{self.prefix}-{self.inputs}-{attempt}"


@dataclass(frozen=True, kw_only=True)
class Split:
    """A render without its build states, and what those states hold."""

    wanted: desired.DesiredState
    seen: observed_.Observed
    specs: tuple[Spec, ...] = ()
    support: tuple[desired.DesiredObject, ...] = ()
    """The other objects of build states (a ServiceAccount, a ConfigMap): always applied."""


@dataclass(frozen=True, kw_only=True)
class Decision:
    """What this pass does about builds."""

    apply: tuple[desired.DesiredObject, ...] = ()
    building: frozenset[str] = frozenset()
    """Groups whose missing image a build is making: Progressing (``Building``)."""
    under_way: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    logs_needed: tuple[progress.LogRequest, ...] = ()
    recheck: tuple[tuple[str, str], ...] = ()
    """(image, uid of the Job that built it): answers the engine forgets, once per Job."""
    wake_in: timedelta | None = None
    keep: frozenset[desired.ObjectRef] = frozenset()
    """Build Jobs left as they are this pass (not deleted as undesired): their inputs
    cannot be known while the registry of the Job's own images cannot be asked."""


def backoff(attempt: int) -> timedelta:
    """The wait before attempt ``attempt + 1``: 30 s doubling, at most 10 minutes."""
    return min(RETRY_BASE * (1 << max(0, min(attempt - 1, 16))), RETRY_MAX)


def inputs_digest(body: Mapping[str, object]) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:INPUTS_LENGTH]


@dataclass(frozen=True, kw_only=True)
class _Parts:
    """What ``split`` takes of one render: it depends on nothing else, so it is kept with
    the render (``DesiredState.derived``) and the render pass after pass is split once."""

    wanted: desired.DesiredState
    jobs: tuple[desired.DesiredObject, ...]
    support: tuple[desired.DesiredObject, ...]
    states: frozenset[str]


_PARTS = "builds.split"
_SPECS = "builds.specs"


def _parts(wanted: desired.DesiredState) -> _Parts:
    jobs = tuple(o for o in wanted.objects if builds.is_build(o))
    states = builds.build_states(jobs)
    support, rest = [], []
    for obj in wanted.objects:
        if obj.state not in states:
            rest.append(obj)  # a build Job's state is a build state: none is here
        elif not builds.is_build(obj):
            support.append(obj)
    kept = tuple(
        desired.StateSpec(name=s.name, after=tuple(a for a in s.after if a not in states))
        for s in wanted.states
        if s.name not in states
    )
    return _Parts(
        wanted=dataclasses.replace(wanted, states=kept, objects=tuple(rest)) if jobs else wanted,
        jobs=jobs,
        support=tuple(support),
        states=states,
    )


def split(wanted: desired.DesiredState, seen: observed_.Observed) -> Split:
    """``wanted`` without build states (and ``after`` edges to them), ``seen`` without the
    build Jobs' own image answers (a builder image gates no node), and the build specs.
    The same render gives the same ``Split.wanted`` object, pass after pass."""
    parts = wanted.keep(_PARTS, _parts)
    if not parts.jobs:
        return Split(wanted=wanted, seen=seen)
    known = parts.wanted.derived.get(_SPECS)
    if isinstance(known, tuple) and known[0] == seen.images:
        specs: tuple[Spec, ...] = known[1]
    else:
        specs = specs_of(parts.jobs, checks=seen.images)
        parts.wanted.derived[_SPECS] = (seen.images, specs)
    states = parts.states
    checks = {key: tuple(c for c in found if c.state not in states) for key, found in seen.images.items()}
    return Split(
        wanted=parts.wanted,
        seen=dataclasses.replace(seen, images={k: v for k, v in checks.items() if v}),
        specs=specs,
        support=parts.support,
    )


def specs_of(
    objects: Iterable[desired.DesiredObject],
    *,
    checks: Mapping[str, tuple[observed_.ImageCheck, ...]],
    ahead: bool = False,
) -> tuple[Spec, ...]:
    """The build specs of ``objects``' kernel-affine build Jobs (``ahead``: for a kernel
    no node runs yet, ``spec.preflight``); ``checks``: the registry's answers, whose
    digests of the Jobs' base images (``sro.dev/build-from``) are among the inputs."""
    out = []
    for obj in objects:
        image = builds.produces(obj)
        if image is None or obj.kernel_group is None:
            continue
        prefix = names.suffixed(obj.ref.name, "", identity=obj.ref.name, limit=PREFIX_MAX)
        found = {c.image: c.digest for c in checks.get(obj.kernel_group.key, ()) if c.state == obj.state}
        bases = [[base, found.get(base, "")] for base in builds.bases(obj)]
        inputs = inputs_digest({"job": obj.body, "bases": bases} if bases else obj.body)
        out.append(
            Spec(group=obj.kernel_group, image=image, obj=obj, inputs=inputs, prefix=prefix, ahead=ahead)
        )
    return tuple(out)


def merge(first: Decision, second: Decision) -> Decision:
    """Both decisions, as one pass's."""
    waits = [w for w in (first.wake_in, second.wake_in) if w is not None]
    return Decision(
        apply=(*first.apply, *second.apply),
        building=first.building | second.building,
        under_way=(*first.under_way, *second.under_way),
        failed=(*first.failed, *second.failed),
        logs_needed=(*first.logs_needed, *second.logs_needed),
        recheck=(*first.recheck, *second.recheck),
        wake_in=min(waits) if waits else None,
        keep=first.keep | second.keep,
    )


def job(spec: Spec, attempt: int, *, sr_name: str) -> desired.DesiredObject:
    """The Job of ``spec``'s ``attempt``: named and labelled with its inputs, tolerating
    the driver-missing taint of the nodes it builds for."""
    new, body = base.edit(spec.obj)
    meta = base.metadata(body)
    meta["name"] = spec.name(attempt)
    base.sub(meta, "labels")[INPUTS_LABEL] = spec.inputs
    pod = podspec.pod_spec(body)
    if pod is not None:
        taint = images.driver_missing_taint(sr_name)
        toleration = {"key": taint.key, "operator": "Exists", "effect": taint.effect}
        pod["tolerations"] = [*(t for t in pod.get("tolerations") or () if t != toleration), toleration]
        if spec.ahead:  # no node runs that kernel yet: a node of the same OS builds it
            base.sub(pod, "nodeSelector").pop(views.KERNEL_LABEL, None)
    return dataclasses.replace(new, wait=False)


def _jobs(spec: Spec, seen: observed_.Observed) -> dict[tuple[str, int], live_records.LiveObject]:
    """(inputs, attempt) -> the live Jobs of ``spec``'s group."""
    pattern = re.compile(re.escape(spec.prefix) + r"-([0-9a-f]{8})-([0-9]{1,6})")
    out = {}
    for ref, live in seen.of_kind("Job"):
        if ref.namespace != spec.obj.ref.namespace:
            continue
        found = pattern.fullmatch(ref.name)
        if found:
            out[(found.group(1), int(found.group(2)))] = live
    return out


def _true(live: live_records.LiveObject, kind: str) -> live_records.ObjectCondition | None:
    found = live.conditions.get(kind)
    return found if found is not None and found.status == "True" else None


def _tail(live: live_records.LiveObject, seen: observed_.Observed) -> tuple[str, progress.LogRequest | None]:
    """The newest pod of Job ``live``: its log tail (when fetched), or a request for it."""
    pods = sorted(
        (p for p in seen.pods if p.owner_kind == "Job" and p.owner_uid == live.uid), key=lambda p: p.created
    )
    if not pods:
        return "", None
    pod = pods[-1]
    tails = readiness.tails_read(seen.logs.get(pod.uid))
    if tails is None:
        containers = tuple(c.name for c in pod.containers)
        return "", progress.LogRequest(
            namespace=pod.namespace, name=pod.name, uid=pod.uid, containers=containers, pattern=_NEVER
        )
    lines = [line for text in tails.values() for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-LOG_LINES:])[-LOG_CHARS:], None


def _kernel(spec: Spec) -> str:
    ahead = ", ahead of its nodes" if spec.ahead else ""
    return f"kernel {spec.group.kernel} ({spec.group.os.tag}{ahead})"


def decide(split_: Split, seen: observed_.Observed, *, rechecked: frozenset[str], now: datetime) -> Decision:
    """What each group's build does this pass (``seen`` with every image answer)."""
    apply: list[desired.DesiredObject] = list(split_.support)
    building: set[str] = set()
    moving: list[str] = []
    failed: list[str] = []
    logs: list[progress.LogRequest] = []
    recheck: list[tuple[str, str]] = []
    waits: list[timedelta] = []
    keep: set[desired.ObjectRef] = set()
    sr_name = split_.wanted.sr_name
    for spec in split_.specs:
        check = next((c for c in seen.images.get(spec.group.key, ()) if c.image == spec.image), None)
        missing = check is not None and check.missing
        live = _jobs(spec, seen)
        own = [c for c in seen.images.get(spec.group.key, ()) if c.state == spec.obj.state]
        absent = next((c for c in own if c.missing), None)
        if absent is not None and missing:  # the builder itself is missing: no Job could run
            failed.append(f"cannot build {spec.image} for {_kernel(spec)}: image {absent.image} of its build "
                          f"Job does not exist ({absent.detail or absent.outcome})")  # fmt: skip
            keep.update(found.ref for found in live.values())
            continue
        if any(not c.exists for c in own):  # its digest, one of the inputs, is unknown: wait
            keep.update(found.ref for found in live.values())
            continue
        current = sorted(n for (h, n) in live if h == spec.inputs)
        if not current:
            if missing or live:
                apply.append(job(spec, 1, sr_name=sr_name))
                building.update({spec.group.key} if missing else ())
                why = "missing" if missing else "built from inputs that changed"
                moving.append(f"building {spec.image} for {_kernel(spec)} ({why}): Job {spec.name(1)}")
            continue
        attempt = current[-1]
        found = live[(spec.inputs, attempt)]
        done, broken = _true(found, "Complete"), _true(found, "Failed")
        if done is None and broken is None:
            keep.add(found.ref)  # a Job is never changed: its template is immutable
            building.update({spec.group.key} if missing else ())
            moving.append(f"building {spec.image} for {_kernel(spec)}: Job {spec.name(attempt)} running")
            continue
        if done is not None and not missing:
            keep.add(found.ref)  # the record of this build
            continue
        if done is not None and found.uid not in rechecked:
            keep.add(found.ref)
            building.add(spec.group.key)
            recheck.append((spec.image, found.uid))
            moving.append(f"built {spec.image} for {_kernel(spec)}: Job {spec.name(attempt)}, looking again")
            waits.append(timedelta(0))
            continue
        ended = times.parse((done or broken or live_records.ObjectCondition(status="")).since)
        due = (ended or now) + backoff(attempt)
        if now >= due:
            apply.append(job(spec, attempt + 1, sr_name=sr_name))
            building.update({spec.group.key} if missing else ())
            moving.append(f"building {spec.image} for {_kernel(spec)}: Job {spec.name(attempt + 1)} (retry)")
            continue
        keep.add(found.ref)
        waits.append(due - now)
        if broken is not None:
            said = broken.message or broken.reason or "failed"
            tail, request = _tail(found, seen)
            if request is not None:  # fetched by this pass: the next one, soon, says it
                logs.append(request)
                waits.append(LOG_SOON)
        else:
            said, tail = f"it completed but {spec.image} still does not exist in its registry", ""
        log_part = f"; log: {tail}" if tail else ""
        failed.append(
            f"build Job {found.ref.namespace}/{found.ref.name} of {spec.image} for {_kernel(spec)} failed "
            f"(attempt {attempt}): {said}{log_part}; next attempt in {int((due - now).total_seconds())} s"
        )
    return Decision(
        apply=tuple(apply),
        building=frozenset(building),
        under_way=tuple(moving),
        failed=tuple(failed),
        logs_needed=tuple(logs),
        recheck=tuple(recheck),
        wake_in=min(waits) if waits else None,
        keep=frozenset(keep),
    )


def status(
    status_: StatusBody, made: Decision, *, previous: Mapping[str, Any], generation: int, now: datetime
) -> StatusBody:
    """``status_`` with the builds' word: ``BuildFailed`` outranks the images' own reason
    (it says why the image is missing), a build under way is ``Building``."""
    if made.failed:
        return summary.status_for_error(
            previous, reason=conditions.BUILD_FAILED, message="; ".join(made.failed), generation=generation,
            now=now, current=status_,
        )  # fmt: skip
    if made.under_way:
        message = "; ".join(made.under_way)
        return summary.status_building(status_, previous, message=message, generation=generation, now=now)
    return status_
