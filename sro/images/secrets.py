"""Reading the pull secrets a pod would pull with: its own ``imagePullSecrets``, then its
service account's, from the pod's namespace.

The kubelet sends the credentials of exactly these secrets; an image check must use the
same ones (``credentials.pick`` chooses among them). A secret that is named but absent
is skipped, as the kubelet skips it; the names of the absent ones are returned so a
message can say why a registry refused. The operator does not watch Secrets (it has no
reason to hold every Secret of the cluster in memory), so these are direct reads, made
only when an image is actually checked and its answer is not cached.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sro import errors
from sro.images import credentials
from sro.kube import http


def names_in(spec: Mapping[str, Any]) -> list[str]:
    """The secret names of an ``imagePullSecrets`` list (a pod spec or a ServiceAccount)."""
    found = spec.get("imagePullSecrets") or ()
    return [str(s["name"]) for s in found if isinstance(s, Mapping) and s.get("name")]


async def read(
    api: http.Api, *, namespace: str, pod_spec: Mapping[str, Any] | None = None, service_account: str = ""
) -> tuple[list[credentials.PullSecret], list[str]]:
    """The pull secrets for a pod of ``pod_spec`` (or of ``service_account`` alone) in
    ``namespace``, in the kubelet's order, and the names that do not exist."""
    names = names_in(pod_spec or {})
    account = service_account or str((pod_spec or {}).get("serviceAccountName") or "default")
    try:
        body = await api.request(
            "GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}", resource="serviceaccounts"
        )
        names.extend(names_in(body))
    except errors.NotFound:
        pass
    return await _secrets(api, namespace=namespace, names=dict.fromkeys(names))


async def _secrets(
    api: http.Api, *, namespace: str, names: Iterable[str]
) -> tuple[list[credentials.PullSecret], list[str]]:
    found: list[credentials.PullSecret] = []
    absent: list[str] = []
    for name in names:
        try:
            body = await api.request(
                "GET", f"/api/v1/namespaces/{namespace}/secrets/{name}", resource="secrets"
            )
        except errors.NotFound:
            absent.append(name)
            continue
        found.append(credentials.PullSecret.from_body(body))
    return found, absent
