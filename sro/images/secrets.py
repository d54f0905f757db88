"""Reading the pull secrets a pod would pull with: its own ``imagePullSecrets``, then its
service account's, from the pod's namespace.

The kubelet sends the credentials of exactly these secrets; an image check must use the
same ones (``credentials.pick`` chooses among them). A secret that is named but absent
is skipped, as the kubelet skips it; the names of the absent ones are returned so a
message can say why a registry refused. The operator does not watch Secrets (it has no
reason to hold every Secret of the cluster in memory), so these are direct reads; a
``Cached`` reader keeps what it read for a minute, so a reconcile per node does not
become a read per node (a pull secret added is used within that minute).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
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


Found = tuple[list[credentials.PullSecret], list[str]]


class Cached:
    """``read`` at most once per ``ttl`` seconds per (namespace, the pod's secret names, its
    service account); the ``kept`` most recently read answers are kept."""

    def __init__(
        self,
        api: http.Api,
        *,
        ttl: float = 60.0,
        kept: int = 256,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self._ttl = ttl
        self._kept = kept
        self._clock = clock
        self._answers: OrderedDict[tuple[str, tuple[str, ...], str], tuple[float, Found]] = OrderedDict()

    async def read(self, *, namespace: str, pod_spec: Mapping[str, Any]) -> Found:
        account = str(pod_spec.get("serviceAccountName") or "default")
        key = (namespace, tuple(names_in(pod_spec)), account)
        held = self._answers.get(key)
        if held is not None and held[0] > self._clock():
            return list(held[1][0]), list(held[1][1])
        found = await read(self._api, namespace=namespace, pod_spec=pod_spec)
        self._answers[key] = (self._clock() + self._ttl, found)
        self._answers.move_to_end(key)
        while len(self._answers) > self._kept:
            self._answers.popitem(last=False)
        return list(found[0]), list(found[1])
