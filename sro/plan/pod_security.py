"""The Pod Security labels of an operand namespace, from what the recipe's pods need.

A cluster whose PodSecurity admission enforces ``baseline`` or ``restricted`` by default
refuses a driver's pods (privileged, host paths, the host's PID namespace) in a namespace
without labels. sro creates the operand namespace, so it labels it with the strictest
Pod Security Standard that still admits every pod the recipe renders (a Pod, or the pod
template of a workload): ``privileged`` where some pod is privileged, shares the host's
network, PID or IPC namespace, mounts a host path, binds a host port or adds capabilities
beyond baseline's; ``restricted`` where every pod meets the restricted profile
(``runAsNonRoot``, no privilege escalation, ``RuntimeDefault`` seccomp, every capability
dropped, only ephemeral kinds of volume); ``baseline`` otherwise. A recipe with no pod
yet (no node selected) gets ``restricted``: there is nothing to admit, and the namespace
is relabelled before the first pod is written. The checks follow the Pod Security
Standards (kubernetes.io/docs/concepts/security/pod-security-standards) and err toward
the more permissive level, never the stricter: a namespace too strict for its pods would
stop the recipe.

The same level goes to ``enforce``, ``audit`` and ``warn`` unless the SpecialResource's
``spec.podSecurity`` says otherwise; ``pod-security.kubernetes.io/<mode>-version`` is
``latest`` unless pinned there. Only namespaces sro created for the SpecialResource are
ever labelled (``sro.engine.namespace``): sro never relabels a namespace it did not make.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sro.hooks import podspec
from sro.model import desired
from sro.model.pod_security import LABEL_PREFIX, MODES, Level, Override

BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
        "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
    }
)  # fmt: skip
"""Capabilities the baseline profile lets a container add."""
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)  # fmt: skip
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
RESTRICTED_VOLUMES = frozenset(
    {
        "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected",
        "secret",
    }
)  # fmt: skip
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


@dataclass(frozen=True, kw_only=True)
class Need:
    """The strictest level every pod admits, and why not stricter (the first pod and
    check that ruled it out; empty for ``restricted``)."""

    level: Level
    reason: str = ""


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(key) or ():
            if isinstance(c, Mapping):
                yield c


def _beyond_baseline(template: Mapping[str, Any]) -> str:
    """Why this pod needs ``privileged``, or "" when baseline admits it."""
    spec = _map(template.get("spec"))
    pod_ctx = _map(spec.get("securityContext"))
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field) is True:
            return f"{field}"
    for volume in spec.get("volumes") or ():
        if isinstance(volume, Mapping) and "hostPath" in volume:
            return f"hostPath volume {volume.get('name', '')}"
    for key, value in _map(_map(template.get("metadata")).get("annotations")).items():
        if str(key).startswith(APPARMOR_ANNOTATION) and not (
            value == "runtime/default" or str(value).startswith("localhost/")
        ):
            return f"AppArmor profile {value}"
    for sysctl in pod_ctx.get("sysctls") or ():
        if isinstance(sysctl, Mapping) and sysctl.get("name") not in SAFE_SYSCTLS:
            return f"sysctl {sysctl.get('name')}"
    if problem := _context_beyond_baseline(pod_ctx):
        return problem
    for c in _containers(spec):
        name = c.get("name", "")
        ctx = _map(c.get("securityContext"))
        if ctx.get("privileged") is True:
            return f"privileged container {name}"
        added = {str(a) for a in _map(ctx.get("capabilities")).get("add") or ()}
        if extra := sorted(added - BASELINE_CAPABILITIES):
            return f"container {name} adds {', '.join(extra)}"
        for port in c.get("ports") or ():
            if isinstance(port, Mapping) and port.get("hostPort"):
                return f"container {name} binds host port {port.get('hostPort')}"
        if ctx.get("procMount") not in (None, "Default"):
            return f"container {name} procMount {ctx.get('procMount')}"
        if problem := _context_beyond_baseline(ctx):
            return f"container {name}: {problem}"
    return ""


def _context_beyond_baseline(ctx: Mapping[str, Any]) -> str:
    """The checks a pod's and a container's securityContext share."""
    if _map(ctx.get("windowsOptions")).get("hostProcess") is True:
        return "hostProcess"
    if _map(ctx.get("seccompProfile")).get("type") == "Unconfined":
        return "seccomp Unconfined"
    if _map(ctx.get("appArmorProfile")).get("type") == "Unconfined":
        return "AppArmor Unconfined"
    selinux = _map(ctx.get("seLinuxOptions"))
    if str(selinux.get("type") or "") not in SELINUX_TYPES or selinux.get("user") or selinux.get("role"):
        return "SELinux options beyond baseline"
    return ""


def _beyond_restricted(template: Mapping[str, Any]) -> str:
    """Why baseline is as strict as this pod allows, or "" when it meets restricted."""
    spec = _map(template.get("spec"))
    pod_ctx = _map(spec.get("securityContext"))
    for volume in spec.get("volumes") or ():
        kinds = set(_map(volume)) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            return f"volume {_map(volume).get('name', '')} of kind {', '.join(sorted(kinds))}"
    if pod_ctx.get("runAsUser") == 0:
        return "runAsUser 0"
    for c in _containers(spec):
        name = c.get("name", "")
        ctx = _map(c.get("securityContext"))
        if ctx.get("allowPrivilegeEscalation") is not False:
            return f"container {name} may escalate privileges"
        non_root = ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot"))
        if non_root is not True or ctx.get("runAsUser") == 0:
            return f"container {name} may run as root"
        seccomp = _map(ctx.get("seccompProfile") or pod_ctx.get("seccompProfile")).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            return f"container {name} has no RuntimeDefault seccomp profile"
        caps = _map(ctx.get("capabilities"))
        if "ALL" not in (caps.get("drop") or ()):
            return f"container {name} does not drop ALL capabilities"
        if set(map(str, caps.get("add") or ())) - {"NET_BIND_SERVICE"}:
            return f"container {name} adds capabilities"
    return ""


def pod_level(template: Mapping[str, Any]) -> Need:
    """The strictest level that admits a pod (``template``: a Pod, or a pod template)."""
    if problem := _beyond_baseline(template):
        return Need(level=Level.PRIVILEGED, reason=problem)
    if problem := _beyond_restricted(template):
        return Need(level=Level.BASELINE, reason=problem)
    return Need(level=Level.RESTRICTED)


def needed(objects: Iterable[desired.DesiredObject]) -> Need:
    """The strictest level that admits every pod of ``objects``, with the reason of the
    first object (in the given order) that rules out a stricter one."""
    need = Need(level=Level.RESTRICTED)
    for obj in objects:
        template = podspec.read_template(obj.body)
        if template is None:
            continue
        found = pod_level(template)
        if found.level.strictness < need.level.strictness:
            need = Need(level=found.level, reason=f"{obj.ref}: {found.reason}")
            if need.level is Level.PRIVILEGED:
                break
    return need


def labels(need: Need, override: Override) -> dict[str, str]:
    """The namespace's ``pod-security.kubernetes.io/*`` labels."""
    out: dict[str, str] = {}
    for mode in MODES:
        out[f"{LABEL_PREFIX}{mode}"] = str(override.level(mode, computed=need.level))
        out[f"{LABEL_PREFIX}{mode}-version"] = override.version
    return out


@dataclass(frozen=True, kw_only=True)
class Labelling:
    """What to do about the operand namespace's Pod Security labels this pass."""

    labels: Mapping[str, str]
    """The labels it must carry (a namespace sro creates is created with them)."""
    relabel: bool
    """Whether the existing namespace lacks some of them and sro must write them."""
    warning: str | None = None


def decide(
    objects: Iterable[desired.DesiredObject], override: Override, *, current: Mapping[str, str] | None
) -> Labelling:
    """The labels for a namespace whose pods are those of ``objects``; ``current`` is the
    labels of sro's own namespace as cached, or None when there is none to change (absent,
    or not shown by the cache yet)."""
    need = needed(objects)
    wanted = labels(need, override)
    stale = current is not None and any(current.get(k) != v for k, v in wanted.items())
    return Labelling(labels=wanted, relabel=stale, warning=too_strict(need, override))


def too_strict(need: Need, override: Override) -> str | None:
    """A warning when the override enforces a stricter level than the pods need (their
    creation will be refused), else None."""
    if override.enforce is None or override.enforce.strictness <= need.level.strictness:
        return None
    return (
        f"spec.podSecurity.enforce is {override.enforce} but the recipe's pods need {need.level} "
        f"({need.reason}): the API server will refuse them"
    )
