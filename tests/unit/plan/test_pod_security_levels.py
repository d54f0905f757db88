"""The operand namespace's Pod Security labels (sro.plan.pod_security, sro.model.pod_security).

Covers the level each kind of pod needs (every baseline and restricted check the
computation makes), the namespace's level as the most permissive of its pods', the built-in
recipes (both privileged), the ``spec.podSecurity`` override and its parsing, and when an
existing namespace must be relabelled. That sro never labels a namespace it did not create
is covered end to end (tests/e2e/test_pod_security.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sro.errors import Location, RecipeInvalid
from sro.hooks import offline, pipeline
from sro.model import desired, pod_security
from sro.model import specialresource as srmodel
from sro.model.pod_security import Level
from sro.plan import pod_security as psa
from sro.render import kinds, values
from sro.render import recipe as recipe_

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
RESTRICTED_CTX = {
    "allowPrivilegeEscalation": False,
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
    "capabilities": {"drop": ["ALL"]},
}


def pod(*, ctx: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "i", "securityContext": RESTRICTED_CTX if ctx is None else ctx}
    return {"metadata": {"name": "p"}, "spec": {"containers": [container], **spec}}


def obj(kind: str, template: dict[str, Any], name: str = "x") -> desired.DesiredObject:
    if kind == "Pod":
        body = {"apiVersion": "v1", "kind": "Pod", **template, "metadata": {"name": name}}
    else:
        body = {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": name},
            "spec": {"template": template},
        }
    return desired.DesiredObject(body=body, state="s", source=Location(file="s/x.yaml", line=1))


def test_a_pod_meeting_the_restricted_profile_needs_restricted() -> None:
    assert psa.pod_level(pod()) == psa.Need(level=Level.RESTRICTED)
    shared = pod(
        ctx={"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        securityContext={"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    )
    assert psa.pod_level(shared).level is Level.RESTRICTED
    volumes = pod(volumes=[{"name": "c", "configMap": {"name": "c"}}, {"name": "e", "emptyDir": {}}])
    assert psa.pod_level(volumes).level is Level.RESTRICTED


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"ctx": {}}, "may escalate privileges"),
        ({"ctx": {**RESTRICTED_CTX, "runAsNonRoot": False}}, "may run as root"),
        ({"ctx": {**RESTRICTED_CTX, "runAsUser": 0}}, "may run as root"),
        ({"ctx": {**RESTRICTED_CTX, "seccompProfile": None}}, "seccomp"),
        ({"ctx": {**RESTRICTED_CTX, "capabilities": {}}}, "drop ALL"),
        (
            {"ctx": {**RESTRICTED_CTX, "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}}},
            "adds capabilities",
        ),
        ({"volumes": [{"name": "data", "nfs": {"server": "s", "path": "/"}}]}, "of kind nfs"),
        ({"securityContext": {"runAsUser": 0}}, "runAsUser 0"),
    ],
)
def test_a_pod_short_of_restricted_needs_baseline(change: dict[str, Any], reason: str) -> None:
    need = psa.pod_level(pod(**change))
    assert need.level is Level.BASELINE
    assert reason in need.reason


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"ctx": {"privileged": True}}, "privileged container c"),
        ({"hostPID": True}, "hostPID"),
        ({"hostNetwork": True}, "hostNetwork"),
        ({"hostIPC": True}, "hostIPC"),
        ({"volumes": [{"name": "run", "hostPath": {"path": "/run"}}]}, "hostPath volume run"),
        ({"ctx": {"capabilities": {"add": ["SYS_ADMIN"]}}}, "adds SYS_ADMIN"),
        ({"ctx": {"seccompProfile": {"type": "Unconfined"}}}, "seccomp Unconfined"),
        ({"ctx": {"procMount": "Unmasked"}}, "procMount"),
        ({"ctx": {"seLinuxOptions": {"type": "spc_t"}}}, "SELinux"),
        ({"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}}, "sysctl kernel.msgmax"),
        ({"securityContext": {"windowsOptions": {"hostProcess": True}}}, "hostProcess"),
    ],
)
def test_a_pod_beyond_baseline_needs_privileged(change: dict[str, Any], reason: str) -> None:
    need = psa.pod_level(pod(**change))
    assert need.level is Level.PRIVILEGED
    assert reason in need.reason


def test_host_ports_and_baseline_capabilities_and_selinux_levels() -> None:
    ported = pod(ctx={})
    ported["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    assert psa.pod_level(ported).level is Level.PRIVILEGED
    assert (
        psa.pod_level(pod(ctx={"capabilities": {"add": ["NET_BIND_SERVICE", "CHOWN"]}})).level
        is Level.BASELINE
    )
    assert psa.pod_level(pod(ctx={"seLinuxOptions": {"level": "s0"}})).level is Level.BASELINE


def test_the_namespace_needs_what_its_most_demanding_pod_needs_and_says_which() -> None:
    assert psa.needed([]) == psa.Need(level=Level.RESTRICTED)
    calm = obj("Deployment", pod(), "calm")
    plain = obj("Pod", pod(ctx={}), "plain")
    driver = obj("DaemonSet", pod(hostPID=True), "driver")
    config = desired.DesiredObject(
        body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
        state="s",
        source=Location(file="s/c.yaml", line=1),
    )
    assert psa.needed([calm, config]).level is Level.RESTRICTED
    assert psa.needed([calm, plain]) == psa.Need(
        level=Level.BASELINE, reason="Pod/plain: container c may escalate privileges"
    )
    assert psa.needed([calm, plain, driver]) == psa.Need(
        level=Level.PRIVILEGED, reason="DaemonSet/driver: hostPID"
    )


@pytest.mark.parametrize("recipe", ["nvidia-gpu", "simple-kmod"])
def test_the_built_in_recipes_need_privileged(recipe: str) -> None:
    loaded = recipe_.load_directory(REPO / "assets" / recipe)
    sr = offline.synthetic_sr(recipe)
    env = pipeline.Environment(
        cluster_version="1.36",
        operator=values.OperatorInfo(namespace="sro-system", image="sro:test", version="test"),
        proxy=values.ProxySettings(),
        is_namespaced=kinds.builtin_is_namespaced,
        is_served=kinds.builtin_is_served,
    )
    wanted = pipeline.render_desired(sr, loaded, offline.representative_nodes(loaded.node_selector), env=env)
    need = psa.needed(wanted.objects)
    assert need.level is Level.PRIVILEGED
    assert "DaemonSet/" in need.reason


def test_labels_carry_every_mode_and_version_and_the_override_wins() -> None:
    need = psa.Need(level=Level.PRIVILEGED, reason="DaemonSet/d: hostPID")
    assert psa.labels(need, pod_security.NONE) == {
        "pod-security.kubernetes.io/enforce": "privileged",
        "pod-security.kubernetes.io/enforce-version": "latest",
        "pod-security.kubernetes.io/audit": "privileged",
        "pod-security.kubernetes.io/audit-version": "latest",
        "pod-security.kubernetes.io/warn": "privileged",
        "pod-security.kubernetes.io/warn-version": "latest",
    }
    only_warn = pod_security.Override(warn=Level.RESTRICTED, version="v1.36")
    got = psa.labels(need, only_warn)
    assert got["pod-security.kubernetes.io/enforce"] == "privileged"
    assert got["pod-security.kubernetes.io/warn"] == "restricted"
    assert got["pod-security.kubernetes.io/audit-version"] == "v1.36"
    enforce = pod_security.Override(enforce=Level.BASELINE)
    assert set(psa.labels(need, enforce).values()) == {"baseline", "latest"}


def test_an_override_stricter_than_the_pods_need_is_warned_about() -> None:
    need = psa.Need(level=Level.PRIVILEGED, reason="DaemonSet/d: hostPID")
    warning = psa.too_strict(need, pod_security.Override(enforce=Level.RESTRICTED))
    assert warning is not None and "DaemonSet/d: hostPID" in warning and "refuse" in warning
    assert psa.too_strict(need, pod_security.Override(enforce=Level.PRIVILEGED)) is None
    assert (
        psa.too_strict(psa.Need(level=Level.RESTRICTED), pod_security.Override(enforce=Level.BASELINE))
        is None
    )
    assert psa.too_strict(need, pod_security.NONE) is None


def test_only_a_namespace_shown_with_other_labels_is_relabelled() -> None:
    driver = obj("DaemonSet", pod(hostPID=True), "driver")
    fresh = psa.decide([driver], pod_security.NONE, current=None)
    assert not fresh.relabel and fresh.labels["pod-security.kubernetes.io/enforce"] == "privileged"
    same = psa.decide([driver], pod_security.NONE, current={**fresh.labels, "sro.dev/owner": "gpu"})
    assert not same.relabel
    assert psa.decide([driver], pod_security.NONE, current={"sro.dev/owner": "gpu"}).relabel
    tightened = psa.decide([obj("Pod", pod())], pod_security.NONE, current=dict(fresh.labels))
    assert tightened.relabel and tightened.labels["pod-security.kubernetes.io/enforce"] == "restricted"


def sr_body(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sro.dev/v1alpha1",
        "kind": "SpecialResource",
        "metadata": {"name": "gpu"},
        "spec": spec,
    }


def test_spec_pod_security_is_parsed_and_checked() -> None:
    assert srmodel.parse(sr_body()).spec.pod_security == pod_security.NONE
    parsed = srmodel.parse(sr_body(podSecurity={"enforce": "baseline", "version": "v1.35"})).spec.pod_security
    assert parsed == pod_security.Override(enforce=Level.BASELINE, version="v1.35")
    with pytest.raises(RecipeInvalid) as caught:
        srmodel.parse(
            sr_body(podSecurity={"enforce": "lax", "warn": "Restricted", "version": "1.30", "x": 1})
        )
    message = str(caught.value)
    assert "SpecialResource gpu" in message
    for part in (
        "spec.podSecurity.enforce 'lax'",
        "spec.podSecurity.warn 'Restricted'",
        "version '1.30'",
        "['x']",
    ):
        assert part in message
    with pytest.raises(RecipeInvalid, match=r"spec\.podSecurity must be a mapping"):
        srmodel.parse(sr_body(podSecurity="privileged"))
