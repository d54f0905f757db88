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

import yaml
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
    path = kubeconfig_path(settings)
    if path is None:
        kconfig.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    else:
        check(settings)
        try:
            await kconfig.load_kube_config(
                config_file=path, context=settings.context, client_configuration=cfg, persist_config=False
            )
        except (kconfig.ConfigException, OSError, ValueError) as exc:
            # A certificate file it names is missing, a field is malformed: the loader's words.
            raise errors.UsageError(f"kubeconfig {path!r}: {' '.join(str(exc).split())}") from None
    cfg.connection_pool_maxsize = settings.pool_size
    return cfg


def kubeconfig_path(settings: settings_.ApiSettings) -> str | None:
    """The kubeconfig to read (``--kubeconfig``, ``KUBECONFIG``, or the default one); None in a
    pod with neither given, where the service account is used."""
    explicit = settings.kubeconfig or os.environ.get("KUBECONFIG")
    if explicit:
        return explicit
    if in_cluster():
        return None
    return _default_kubeconfig()


def check(settings: settings_.ApiSettings) -> None:
    """Refuse, in one line, a kubeconfig that is missing or names no usable context, before
    anything else starts (the loader's own errors are a logged warning, then a misleading
    "Expected key current-context" about the empty config it made of nothing)."""
    path = kubeconfig_path(settings)
    if path is None:
        if settings.context:
            raise errors.UsageError(
                f"--context {settings.context!r}: no kubeconfig to take it from (in a pod sro uses its "
                "service account; give --kubeconfig)"
            )
        return
    names = [p for p in path.split(os.pathsep) if p]
    what = "--kubeconfig" if settings.kubeconfig else "KUBECONFIG" if os.environ.get("KUBECONFIG") else ""
    if not any(Path(p).expanduser().is_file() for p in names):
        if what:
            raise errors.UsageError(f"{what} {path!r} is not a readable file")
        raise errors.UsageError(
            f"no KUBECONFIG, not in a pod, and the default kubeconfig {path!r} is not a readable file"
        )
    contexts: dict[str, Any] = {}
    clusters: set[str] = set()
    current = ""
    for name in names:  # merged as the loader merges them: first entry of a name wins
        body = _read(Path(name).expanduser())
        for entry in _entries(body, "contexts"):
            contexts.setdefault(str(entry.get("name")), entry.get("context") or {})
        clusters.update(str(entry.get("name")) for entry in _entries(body, "clusters"))
        current = str(body.get("current-context") or "") if "current-context" in body else current
    context = settings.context or current
    if not context:
        hint = f": pass --context (one of {_listed(contexts)})" if contexts else " and no context"
        raise errors.UsageError(f"kubeconfig {path!r} has no current-context{hint}")
    if context not in contexts:
        raise errors.UsageError(
            f"kubeconfig {path!r} has no context {context!r} (it has {_listed(contexts)})"
        )
    cluster = str(contexts[context].get("cluster") or "") if isinstance(contexts[context], dict) else ""
    if cluster not in clusters:
        raise errors.UsageError(
            f"kubeconfig {path!r}: context {context!r} names no known cluster ({cluster!r})"
        )


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        body = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise errors.UsageError(
            f"kubeconfig {str(path)!r} cannot be read: {' '.join(str(exc).split())}"
        ) from None
    if not isinstance(body, dict):
        raise errors.UsageError(f"kubeconfig {str(path)!r} is not a mapping")
    return body


def _entries(body: dict[str, Any], key: str) -> list[dict[str, Any]]:
    found = body.get(key) or []
    return [e for e in found if isinstance(e, dict)] if isinstance(found, list) else []


def _listed(names: Any) -> str:
    return ", ".join(sorted(names)) or "none"


def _default_kubeconfig() -> str:
    return str(Path(KUBE_CONFIG_DEFAULT_LOCATION).expanduser())


async def bearer_token(cfg: Any) -> str | None:
    """The ``Authorization`` header value, if this configuration uses a token.

    ``get_api_key_with_prefix`` runs the loader's refresh hook first, which re-reads
    an in-cluster projected token when it is due.
    """
    if "BearerToken" not in (cfg.api_key or {}) and cfg.refresh_api_key_hook is None:
        return None
    value = await cfg.get_api_key_with_prefix("BearerToken")
    return str(value) if value else None
