"""``sro.dev/proxy``: the cluster's egress proxy in every container's environment.

Driver containers download packages; behind a proxy they need HTTP_PROXY, HTTPS_PROXY
and NO_PROXY, in both cases because tools disagree on which they read. Values set by
the recipe for the same names are replaced so the cluster setting wins. With no proxy
configured nothing is injected.
"""

from __future__ import annotations

from collections.abc import Sequence

from sro import errors
from sro.hooks import base, keys, podspec
from sro.model import desired

ANNOTATION = "proxy"


def apply(objects: Sequence[desired.DesiredObject], ctx: base.Context) -> list[desired.DesiredObject]:
    settings = {
        "HTTP_PROXY": ctx.proxy.http,
        "HTTPS_PROXY": ctx.proxy.https,
        "NO_PROXY": ctx.proxy.no_proxy,
    }
    env = [(k, v) for name, v in settings.items() if v for k in (name, name.lower())]
    out: list[desired.DesiredObject] = []
    for obj in objects:
        if not keys.flag(obj, ANNOTATION):
            out.append(obj)
            continue
        if not podspec.runs_pods(obj.kind):
            ctx.problems.add(
                errors.RecipeInvalid(
                    f"{obj.ref}: sro.dev/proxy applies to kinds that run pods",
                    location=ctx.locate(obj, "sro.dev/proxy"),
                )
            )
            continue
        if not env:
            out.append(obj)
            continue
        new, body = base.edit(obj)
        spec = podspec.pod_spec(body)
        assert spec is not None
        names = {k for k, _ in env}
        for container in podspec.containers(spec):
            kept = [
                e for e in container.get("env") or () if not (isinstance(e, dict) and e.get("name") in names)
            ]
            container["env"] = kept + [{"name": k, "value": v} for k, v in env]
        out.append(new)
    return out
