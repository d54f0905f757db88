"""Where the API server is and how to prove who we are.

``load`` turns the settings into an ``Endpoint``: the server's address, the TLS context
(the CA to trust, a client certificate if the user has one), the proxy, and the
``Credentials`` that give each request its ``Authorization`` header. It reads the
kubeconfig (``sro.kube.kubeconfig``) or, in a pod given none, the service account.
``sro.kube.http`` builds its one session from the endpoint.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import ssl
import tempfile
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from sro import errors
from sro import settings as settings_
from sro.kube import credentials, kubeconfig

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
SERVICE_TOKEN_FILENAME = str(SERVICE_ACCOUNT / "token")
SERVICE_CA_FILENAME = str(SERVICE_ACCOUNT / "ca.crt")


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """One API server and how to talk to it."""

    host: str
    tls: ssl.SSLContext | None  # None: plain http (a local test server)
    server_hostname: str | None  # the name the certificate is checked against, if not the host's
    proxy: str | None
    credentials: credentials.Credentials


def in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and Path(SERVICE_TOKEN_FILENAME).exists()


async def load(settings: settings_.ApiSettings) -> Endpoint:
    """The endpoint of the given kubeconfig, else in-cluster, else the default kubeconfig."""
    path = kubeconfig_path(settings)
    if path is None:
        return _in_cluster()
    check(settings)
    chosen = kubeconfig.choose(kubeconfig.merged(path), context=settings.context)
    try:
        return await _from_kubeconfig(chosen, path=path)
    except ssl.SSLError as exc:
        raise errors.UsageError(f"kubeconfig {path!r}: TLS material: {' '.join(str(exc).split())}") from None
    except OSError as exc:  # a file it names is missing or unreadable
        raise errors.UsageError(f"kubeconfig {path!r}: {' '.join(str(exc).split())}") from None


def _in_cluster() -> Endpoint:
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    except ValueError:
        pass
    server = f"https://{host}:{port}"
    try:
        tls = ssl.create_default_context(cafile=SERVICE_CA_FILENAME)
    except OSError as exc:  # ssl.SSLError included: a CA file that is not a certificate
        raise errors.UsageError(
            f"in a pod, the service account's CA {SERVICE_CA_FILENAME}: {' '.join(str(exc).split())}"
        ) from None
    return Endpoint(
        host=server,
        tls=tls,
        server_hostname=None,
        proxy=env_proxy(server),
        credentials=credentials.TokenFile(SERVICE_TOKEN_FILENAME),
    )


async def _from_kubeconfig(chosen: kubeconfig.Chosen, *, path: str) -> Endpoint:
    cluster, user = chosen.cluster, chosen.user
    server = cluster.text("server").rstrip("/")
    if not server:
        raise errors.UsageError(f"kubeconfig {path!r}: context {chosen.context!r}: the cluster has no server")
    scheme = urllib.parse.urlsplit(server).scheme
    if scheme not in ("https", "http"):
        raise errors.UsageError(
            f"kubeconfig {path!r}: server {server!r} is not an https:// or http:// address"
        )
    if user.body.get("username") or user.body.get("password"):
        raise errors.UsageError(
            f"kubeconfig {path!r}: user of context {chosen.context!r} uses basic authentication, "
            "which Kubernetes no longer offers"
        )
    creds = await _credentials(chosen, path=path)
    tls = None
    if scheme == "https":
        tls = _tls(cluster)
        cert, key = user.path("client-certificate"), user.path("client-key")
        cert_data, key_data = user.text("client-certificate-data"), user.text("client-key-data")
        if isinstance(creds, credentials.ExecPlugin):  # a plugin may answer with a certificate
            status = await creds.status()
            cert_data = str(status.get("clientCertificateData") or cert_data)
            key_data = str(status.get("clientKeyData") or key_data)
        if cert or cert_data:
            _client_certificate(tls, cert=cert, key=key, cert_data=cert_data, key_data=key_data)
    return Endpoint(
        host=server,
        tls=tls,
        server_hostname=cluster.text("tls-server-name") or None,
        proxy=cluster.text("proxy-url") or env_proxy(server),
        credentials=creds,
    )


async def _credentials(chosen: kubeconfig.Chosen, *, path: str) -> credentials.Credentials:
    user = chosen.user
    if user.body.get("auth-provider"):
        return await credentials.LibraryProvider.load(path, context=chosen.context)
    spec = user.body.get("exec")
    if spec:
        if not isinstance(spec, dict):
            raise errors.UsageError(
                f"kubeconfig {path!r}: exec of context {chosen.context!r} is not a mapping"
            )
        return credentials.ExecPlugin(spec, base=user.base, cluster=chosen.cluster.body)
    if user.text("token"):
        return credentials.Token(user.text("token"))
    if user.text("tokenFile"):
        return credentials.TokenFile(user.path("tokenFile"))
    return credentials.NoToken()


def _tls(cluster: kubeconfig.Entry) -> ssl.SSLContext:
    ca, ca_data = cluster.path("certificate-authority"), cluster.text("certificate-authority-data")
    # Given a CA, trust that CA alone; given none, the system's.
    tls = ssl.create_default_context(cafile=ca or None, cadata=_pem(ca_data).decode() if ca_data else None)
    if cluster.body.get("insecure-skip-tls-verify") is True:
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
    return tls


def _client_certificate(tls: ssl.SSLContext, *, cert: str, key: str, cert_data: str, key_data: str) -> None:
    if not cert_data and not key_data:
        tls.load_cert_chain(cert, keyfile=key or None)
        return
    # The ssl module loads a certificate and key only from files: a private directory
    # holds them for the moment it takes.
    with tempfile.TemporaryDirectory(prefix="sro-tls-") as tmp:
        cert_file, key_file = Path(tmp) / "cert.pem", Path(tmp) / "key.pem"
        cert_file.write_bytes(_pem(cert_data) if cert_data else Path(cert).read_bytes())
        key_file.write_bytes(_pem(key_data) if key_data else Path(key).read_bytes())
        tls.load_cert_chain(str(cert_file), keyfile=str(key_file))


def _pem(data: str) -> bytes:
    """PEM material from a ``*-data`` field: base64 in a kubeconfig, plain PEM from an exec plugin."""
    if "-----BEGIN" in data:
        return data.encode()
    try:
        return base64.b64decode(data, validate=False)
    except ValueError as exc:
        raise ssl.SSLError(f"not base64: {exc}") from None


def env_proxy(host: str) -> str | None:
    """The proxy ``HTTPS_PROXY``/``HTTP_PROXY`` name for the API server (``NO_PROXY`` kept)."""
    parts = urllib.parse.urlsplit(host)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


def kubeconfig_path(settings: settings_.ApiSettings) -> str | None:
    """The kubeconfig to read (``--kubeconfig``, ``KUBECONFIG``, or the default one); None in a
    pod with neither given, where the service account is used."""
    explicit = settings.kubeconfig or os.environ.get("KUBECONFIG")
    if explicit:
        return explicit
    if in_cluster():
        return None
    return str(kubeconfig.DEFAULT.expanduser())


def check(settings: settings_.ApiSettings) -> None:
    """Refuse, in one line, a kubeconfig that is missing or names no usable context, before
    anything else starts."""
    path = kubeconfig_path(settings)
    if path is None:
        if settings.context:
            raise errors.UsageError(
                f"--context {settings.context!r}: no kubeconfig to take it from (in a pod sro uses its "
                "service account; give --kubeconfig)"
            )
        return
    what = "--kubeconfig" if settings.kubeconfig else "KUBECONFIG" if os.environ.get("KUBECONFIG") else ""
    if not any(p.is_file() for p in kubeconfig.paths(path)):
        if what:
            raise errors.UsageError(f"{what} {path!r} is not a readable file")
        raise errors.UsageError(
            f"no KUBECONFIG, not in a pod, and the default kubeconfig {path!r} is not a readable file"
        )
    kubeconfig.choose(kubeconfig.merged(path), context=settings.context)
