"""Where the API server is and how to prove who we are.

kubernetes-asyncio parses kubeconfigs and the in-cluster service account; sro uses
only its ``Configuration`` and the aiohttp session its ``ApiClient`` builds (TLS
client certificates are already in that session's SSL context). Both loaders are
given ``client_configuration=`` so the library's global default is never touched.
Bearer tokens are not in the session: ``sro.kube.http`` sends them per request,
through ``bearer_token`` (which refreshes a projected token file when it changes).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kubernetes_asyncio import config as kconfig
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config.kube_config import KUBE_CONFIG_DEFAULT_LOCATION

from sro import errors
from sro import settings as settings_


def in_cluster() -> bool:
    return (
        bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
        and Path(kconfig.incluster_config.SERVICE_TOKEN_FILENAME).exists()
    )


async def load(settings: settings_.ApiSettings) -> Any:
    """A fresh ``Configuration``: the given kubeconfig, else in-cluster, else the default kubeconfig."""
    cfg = Configuration()
    explicit = settings.kubeconfig or os.environ.get("KUBECONFIG")
    if explicit:
        _must_exist(explicit, what="KUBECONFIG")
        await kconfig.load_kube_config(config_file=explicit, client_configuration=cfg, persist_config=False)
    elif in_cluster():
        kconfig.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    else:
        _must_exist(_default_kubeconfig(), what="no KUBECONFIG, not in a pod, and the default kubeconfig")
        await kconfig.load_kube_config(client_configuration=cfg, persist_config=False)
    cfg.connection_pool_maxsize = settings.pool_size
    return cfg


def _default_kubeconfig() -> str:
    return str(Path(KUBE_CONFIG_DEFAULT_LOCATION).expanduser())


def _must_exist(paths: str, *, what: str) -> None:
    """Say which kubeconfig is missing, in one line, before the library's loader prints a
    line of its own and then fails on the empty config it made of nothing."""
    names = [p for p in paths.split(os.pathsep) if p]
    if not any(Path(p).is_file() for p in names):
        raise errors.SroError(f"{what} {paths!r} is not a readable file")


async def bearer_token(cfg: Any) -> str | None:
    """The ``Authorization`` header value, if this configuration uses a token.

    ``get_api_key_with_prefix`` runs the loader's refresh hook first, which re-reads
    an in-cluster projected token when it is due.
    """
    if "BearerToken" not in (cfg.api_key or {}) and cfg.refresh_api_key_hook is None:
        return None
    value = await cfg.get_api_key_with_prefix("BearerToken")
    return str(value) if value else None
