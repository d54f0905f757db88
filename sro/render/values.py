"""The values templates see (contract §4), and how ``set`` merges over recipe defaults.

Values are plain dicts and lists so templates read them with dots or brackets alike.
``set`` is data: it is merged, never rendered, so a value that looks like a template is
printed as written (one rendering pass, unlike the original operator's two).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sro.model import desired, kernels
from sro.model import specialresource as srmodel


@dataclass(frozen=True, kw_only=True)
class ClusterInfo:
    """Facts about the cluster a render targets."""

    version: str = "1.36"  # "1.36" or "v1.36.3"

    def values(self) -> dict[str, Any]:
        text = self.version.removeprefix("v")
        parts = text.split(".")
        major = int(parts[0]) if parts[0].isdigit() else 0
        minor_digits = "".join(ch for ch in (parts[1] if len(parts) > 1 else "") if ch.isdigit())
        return {"version": text, "major": major, "minor": int(minor_digits or 0)}


@dataclass(frozen=True, kw_only=True)
class OperatorInfo:
    """Facts about the running operator that recipes may refer to."""

    namespace: str = "sro-system"
    image: str = ""
    version: str = ""

    def values(self) -> dict[str, str]:
        return {"namespace": self.namespace, "image": self.image, "version": self.version}


@dataclass(frozen=True, kw_only=True)
class ProxySettings:
    """The cluster's egress proxy; empty strings when there is none."""

    http: str = ""
    https: str = ""
    no_proxy: str = ""

    def values(self) -> dict[str, str]:
        return {"http": self.http, "https": self.https, "no_proxy": self.no_proxy}

    @property
    def configured(self) -> bool:
        return bool(self.http or self.https or self.no_proxy)


def merge(defaults: Any, overrides: Any) -> Any:
    """``overrides`` over ``defaults``: mappings merge key by key, lists and scalars replace,
    and a ``None`` override removes the default. Neither input is modified."""
    if isinstance(defaults, Mapping) and isinstance(overrides, Mapping):
        out = {k: copy.deepcopy(v) for k, v in defaults.items()}
        for key, value in overrides.items():
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = merge(out[key], value)
            else:
                out[key] = _without_nulls(value)
        return out
    return _without_nulls(overrides)


def _without_nulls(value: Any) -> Any:
    """A copy of ``value`` in which null mapping entries are dropped (they remove nothing)."""
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_without_nulls(v) for v in value]
    return value


@dataclass(frozen=True, kw_only=True)
class Inputs:
    """Everything that is the same for every document of one render."""

    sr: srmodel.SpecialResource
    recipe_name: str
    set_values: Mapping[str, Any]
    node_selector: Mapping[str, str]
    cluster: ClusterInfo
    operator: OperatorInfo
    proxy: ProxySettings


def base_values(inputs: Inputs, *, state: str) -> dict[str, Any]:
    """Values of a document that is rendered once (no ``kernel``/``os``)."""
    return {
        "sr": copy.deepcopy(dict(inputs.sr.body)),
        "set": copy.deepcopy(dict(inputs.set_values)),
        "namespace": inputs.sr.spec.namespace,
        "recipe": {"name": inputs.recipe_name},
        "state": {"name": state},
        "node_selector": dict(inputs.node_selector),
        "cluster": inputs.cluster.values(),
        "proxy": inputs.proxy.values(),
        "operator": inputs.operator.values(),
    }


def kernel_values(group: desired.KernelGroup) -> dict[str, Any]:
    """The extra values of a kernel-affine document rendered for ``group``."""
    info = kernels.parse_kernel(group.kernel, architecture=group.arch)
    return {"kernel": info.values(), "os": kernels.os_values(group.os)}
