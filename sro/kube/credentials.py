"""Who sro says it is: the ``Authorization`` header of every request, kept fresh.

A kubeconfig user or the in-cluster service account proves identity one of four ways,
and each is one ``Credentials`` here:

* a client certificate: in the TLS context (``sro.kube.config``), no header (``NoToken``);
* a fixed ``token`` (``Token``);
* a token file (``tokenFile``, or the service account's projected token, which the kubelet
  rotates): read again once a minute, as client-go does (``TokenFile``);
* an exec credential plugin (``exec``: cloud CLIs, ``kubelogin``): run when first needed
  and again when the credential it gave expires (``ExecPlugin``).

kubeconfig ``auth-provider`` stanzas (the older OIDC and cloud plugins) are read by
kubernetes-asyncio's loader, imported only then (``LibraryProvider``).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from sro import errors

TOKEN_FILE_PERIOD = 60.0
"""Seconds a token file's contents are used before it is read again."""
EXEC_TIMEOUT = 60.0
"""Seconds an exec plugin may take (it may be asking a cloud's token service)."""
EXEC_MARGIN = 30.0
"""An exec credential is renewed this many seconds before it says it expires."""
EXEC_OUTPUT_LIMIT = 1 << 20
EXEC_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")


class Credentials(Protocol):
    async def header(self) -> str | None:
        """The ``Authorization`` header value, or None to send none."""
        ...


class NoToken:
    async def header(self) -> str | None:
        return None


class Token:
    def __init__(self, token: str) -> None:
        self._value = f"Bearer {token}"

    async def header(self) -> str | None:
        return self._value


class TokenFile:
    """A token read from ``path``, again every ``TOKEN_FILE_PERIOD`` seconds; the last good
    one is kept while the file cannot be read (a rotation in progress)."""

    def __init__(self, path: str, *, clock: Any = time.monotonic) -> None:
        self._path = Path(path)
        self._clock = clock
        self._value: str | None = None
        self._read_at = float("-inf")
        self._read()
        if self._value is None:
            raise errors.UsageError(f"token file {path!r} cannot be read or is empty")

    def _read(self) -> None:
        try:
            token = self._path.read_text().strip()
        except (OSError, UnicodeDecodeError):
            return
        if token:
            self._value = f"Bearer {token}"
            self._read_at = self._clock()

    async def header(self) -> str | None:
        if self._clock() - self._read_at >= TOKEN_FILE_PERIOD:
            self._read()
        return self._value


class ExecPlugin:
    """A kubeconfig ``exec`` stanza: the command's ExecCredential, renewed when it expires."""

    def __init__(self, spec: Mapping[str, Any], *, base: Path, cluster: Mapping[str, Any]) -> None:
        command = str(spec.get("command") or "")
        if not command:
            raise errors.UsageError("kubeconfig exec credential plugin: no command")
        if os.sep in command and not Path(command).is_absolute():
            command = str(base / command)  # relative to the kubeconfig, as kubectl runs it
        self._argv = [command, *(str(a) for a in spec.get("args") or [])]
        version = str(spec.get("apiVersion") or "")
        if version not in EXEC_VERSIONS:
            raise errors.UsageError(
                f"kubeconfig exec credential plugin {command!r}: apiVersion {version!r} is not one of "
                + ", ".join(EXEC_VERSIONS)
            )
        self._version = version
        self._hint = str(spec.get("installHint") or "")
        self._env = {
            str(e.get("name")): str(e.get("value")) for e in spec.get("env") or [] if isinstance(e, dict)
        }
        info: dict[str, Any] = {"interactive": False}
        if spec.get("provideClusterInfo"):
            info["cluster"] = {
                k: v
                for k, v in cluster.items()
                if k in ("server", "certificate-authority-data", "tls-server-name")
            }
        self._info = json.dumps({"apiVersion": version, "kind": "ExecCredential", "spec": info})
        self._status: Mapping[str, Any] = {}
        self._expires = float("-inf")
        self._lock = asyncio.Lock()

    async def status(self) -> Mapping[str, Any]:
        """The plugin's current ExecCredential status, run again when expired."""
        async with self._lock:
            if time.time() >= self._expires:
                self._status, self._expires = await self._run()
            return self._status

    async def header(self) -> str | None:
        token = (await self.status()).get("token")
        return f"Bearer {token}" if token else None

    async def _run(self) -> tuple[Mapping[str, Any], float]:
        name = self._argv[0]
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._argv,
                env={**os.environ, **self._env, "KUBERNETES_EXEC_INFO": self._info},
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                limit=EXEC_OUTPUT_LIMIT,
            )
        except OSError as exc:
            hint = f" ({self._hint.strip()})" if self._hint else ""
            raise errors.UsageError(f"exec credential plugin {name!r} cannot be run: {exc}{hint}") from None
        try:
            out, err = await asyncio.wait_for(proc.communicate(), EXEC_TIMEOUT)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise errors.TransportError(
                f"exec credential plugin {name!r} gave no answer in {EXEC_TIMEOUT:.0f} s"
            ) from None
        if proc.returncode != 0:
            said = " ".join(err.decode(errors="replace").split())[:300]
            raise errors.TransportError(f"exec credential plugin {name!r} exited {proc.returncode}: {said}")
        return parse_exec(out, plugin=name, version=self._version)


def parse_exec(out: bytes, *, plugin: str, version: str) -> tuple[Mapping[str, Any], float]:
    """An ExecCredential's status and when (epoch seconds) to run the plugin again."""
    try:
        body = json.loads(out)
    except ValueError as exc:
        raise errors.TransportError(f"exec credential plugin {plugin!r}: output is not JSON: {exc}") from None
    status = body.get("status") if isinstance(body, dict) else None
    if not isinstance(status, dict) or not (status.get("token") or status.get("clientCertificateData")):
        raise errors.TransportError(
            f"exec credential plugin {plugin!r}: no token or certificate in its status"
        )
    if body.get("apiVersion") != version:
        raise errors.TransportError(
            f"exec credential plugin {plugin!r} answered {body.get('apiVersion')!r}, asked for {version!r}"
        )
    expires = float("inf")
    stamp = status.get("expirationTimestamp")
    if stamp:
        try:
            when = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
        except ValueError:
            raise errors.TransportError(
                f"exec credential plugin {plugin!r}: expirationTimestamp {stamp!r} is not a time"
            ) from None
        expires = (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp() - EXEC_MARGIN
    return status, expires


class LibraryProvider:
    """A kubeconfig ``auth-provider``, through kubernetes-asyncio's loader (imported here only)."""

    def __init__(self, cfg: Any) -> None:
        self._cfg = cfg

    @classmethod
    async def load(cls, path: str, *, context: str) -> LibraryProvider:
        from kubernetes_asyncio import config as kconfig  # noqa: PLC0415 - only for auth-provider
        from kubernetes_asyncio.client import Configuration  # noqa: PLC0415

        cfg = Configuration()
        try:
            await kconfig.load_kube_config(
                config_file=path, context=context, client_configuration=cfg, persist_config=False
            )
        except (kconfig.ConfigException, OSError, ValueError) as exc:
            raise errors.UsageError(f"kubeconfig {path!r}: {' '.join(str(exc).split())}") from None
        return cls(cfg)

    async def header(self) -> str | None:
        cfg = self._cfg
        if "BearerToken" not in (cfg.api_key or {}) and cfg.refresh_api_key_hook is None:
            return None
        value = await cfg.get_api_key_with_prefix("BearerToken")
        return str(value) if value else None
