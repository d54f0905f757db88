"""Kubeconfigs read as kubectl reads them: merged, paths relative to their file, every
credential form turned into the header or TLS material it stands for."""

from __future__ import annotations

import asyncio
import base64
import datetime
import os
import ssl
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from sro import errors
from sro import settings as settings_
from sro.kube import config, credentials, kubeconfig


def _write(path: Path, *, clusters: dict, users: dict, contexts: dict, current: str = "") -> Path:
    body = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": n, "cluster": c} for n, c in clusters.items()],
        "users": [{"name": n, "user": u} for n, u in users.items()],
        "contexts": [{"name": n, "context": c} for n, c in contexts.items()],
    }
    if current:
        body["current-context"] = current
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(body))
    return path


def _pair() -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sro-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem_key = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), pem_key


def _settings(path: Path, context: str | None = None) -> settings_.ApiSettings:
    return settings_.ApiSettings(kubeconfig=str(path), context=context)


def test_first_file_wins_and_paths_start_from_their_file(tmp_path: Path) -> None:
    one = _write(
        tmp_path / "one" / "config",
        clusters={"c": {"server": "https://one.example:6443", "certificate-authority": "ca.pem"}},
        users={"u": {"tokenFile": "token"}},
        contexts={"a": {"cluster": "c", "user": "u"}},
        current="a",
    )
    two = _write(
        tmp_path / "two" / "config",
        clusters={"c": {"server": "https://two.example:6443"}, "d": {"server": "https://d.example"}},
        users={"u": {"token": "two"}},
        contexts={"b": {"cluster": "d", "user": "u"}},
        current="b",
    )
    merged = kubeconfig.merged(os.pathsep.join([str(one), str(tmp_path / "absent"), str(two)]))
    assert merged.current == "a"
    assert sorted(merged.contexts) == ["a", "b"]
    chosen = kubeconfig.choose(merged, context=None)
    assert chosen.cluster.text("server") == "https://one.example:6443"
    assert chosen.cluster.path("certificate-authority") == str(tmp_path / "one" / "ca.pem")
    assert chosen.user.path("tokenFile") == str(tmp_path / "one" / "token")
    other = kubeconfig.choose(merged, context="b")
    assert other.cluster.text("server") == "https://d.example"
    assert other.user.body == {"tokenFile": "token"}  # the first file's user of that name


def test_a_context_naming_an_unknown_user_is_refused(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "config",
        clusters={"c": {"server": "https://x"}},
        users={},
        contexts={"a": {"cluster": "c", "user": "nobody"}},
        current="a",
    )
    with pytest.raises(errors.UsageError, match="names no known user \\('nobody'\\)"):
        config.check(_settings(path))


async def test_token_and_server_name_and_proxy_url(tmp_path: Path) -> None:
    cert, _ = _pair()
    path = _write(
        tmp_path / "config",
        clusters={
            "c": {
                "server": "https://10.0.0.1:6443/",
                "certificate-authority-data": base64.b64encode(cert).decode(),
                "tls-server-name": "kubernetes",
                "proxy-url": "http://proxy.example:3128",
            }
        },
        users={"u": {"token": "s3cret"}},
        contexts={"a": {"cluster": "c", "user": "u"}},
        current="a",
    )
    endpoint = await config.load(_settings(path))
    assert endpoint.host == "https://10.0.0.1:6443"
    assert endpoint.server_hostname == "kubernetes"
    assert endpoint.proxy == "http://proxy.example:3128"
    assert await endpoint.credentials.header() == "Bearer s3cret"
    assert endpoint.tls is not None and endpoint.tls.verify_mode == ssl.CERT_REQUIRED
    assert len(endpoint.tls.get_ca_certs()) == 1


async def test_client_certificate_as_data_and_as_files(tmp_path: Path) -> None:
    cert, key = _pair()
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "me.crt").write_bytes(cert)
    (tmp_path / "pki" / "me.key").write_bytes(key)
    for name, user in (
        (
            "data",
            {
                "client-certificate-data": base64.b64encode(cert).decode(),
                "client-key-data": base64.b64encode(key).decode(),
            },
        ),
        ("files", {"client-certificate": "pki/me.crt", "client-key": "pki/me.key"}),
    ):
        path = _write(
            tmp_path / f"{name}.yaml",
            clusters={"c": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}},
            users={"u": user},
            contexts={"a": {"cluster": "c", "user": "u"}},
            current="a",
        )
        endpoint = await config.load(_settings(path))
        assert endpoint.tls is not None and endpoint.tls.verify_mode == ssl.CERT_NONE, name
        assert await endpoint.credentials.header() is None, name


async def test_a_key_that_does_not_match_is_one_line(tmp_path: Path) -> None:
    cert, _ = _pair()
    _, other_key = _pair()
    path = _write(
        tmp_path / "config",
        clusters={"c": {"server": "https://127.0.0.1:1"}},
        users={
            "u": {
                "client-certificate-data": base64.b64encode(cert).decode(),
                "client-key-data": base64.b64encode(other_key).decode(),
            }
        },
        contexts={"a": {"cluster": "c", "user": "u"}},
        current="a",
    )
    with pytest.raises(errors.UsageError, match="TLS material") as caught:
        await config.load(_settings(path))
    assert "\n" not in str(caught.value)


async def test_basic_authentication_is_refused(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "config",
        clusters={"c": {"server": "https://127.0.0.1:1"}},
        users={"u": {"username": "admin", "password": "x"}},
        contexts={"a": {"cluster": "c", "user": "u"}},
        current="a",
    )
    with pytest.raises(errors.UsageError, match="basic authentication"):
        await config.load(_settings(path))


def test_token_file_is_read_again_after_its_period(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    now = [0.0]
    source = credentials.TokenFile(str(token), clock=lambda: now[0])
    token.write_text("second")

    async def header() -> str | None:
        return await source.header()

    assert asyncio.run(header()) == "Bearer first"
    now[0] = credentials.TOKEN_FILE_PERIOD + 1
    assert asyncio.run(header()) == "Bearer second"
    token.unlink()  # mid-rotation: the last good token goes on
    now[0] = 3 * credentials.TOKEN_FILE_PERIOD
    assert asyncio.run(header()) == "Bearer second"


def _plugin(tmp_path: Path, script: str) -> Path:
    path = tmp_path / "bin" / "plugin"
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path


async def test_exec_plugin_runs_again_when_its_credential_expires(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    past = "2000-01-01T00:00:00Z"
    _plugin(
        tmp_path,
        f'echo run >> {runs}\ntest "$KUBERNETES_EXEC_INFO" != "" || exit 3\n'
        'printf \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
        f'"status":{{"token":"%s","expirationTimestamp":"{past}"}}}}\' "$TOKEN"\n',
    )
    spec = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": "bin/plugin",  # relative to the kubeconfig's directory
        "env": [{"name": "TOKEN", "value": "from-plugin"}],
    }
    path = _write(
        tmp_path / "config",
        clusters={"c": {"server": "http://127.0.0.1:1"}},
        users={"u": {"exec": spec}},
        contexts={"a": {"cluster": "c", "user": "u"}},
        current="a",
    )
    endpoint = await config.load(_settings(path))
    assert endpoint.tls is None
    assert await endpoint.credentials.header() == "Bearer from-plugin"
    assert await endpoint.credentials.header() == "Bearer from-plugin"
    assert runs.read_text().count("run") == 2  # expired at once: each header ran it


async def test_exec_plugin_is_run_once_while_its_credential_holds(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _plugin(
        tmp_path,
        f"echo run >> {runs}\n"
        'echo \'{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",'
        '"status":{"token":"t"}}\'\n',
    )
    plugin = credentials.ExecPlugin(
        {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(tmp_path / "bin" / "plugin")},
        base=tmp_path,
        cluster={},
    )
    for _ in range(3):
        assert await plugin.header() == "Bearer t"
    assert runs.read_text().count("run") == 1


@pytest.mark.parametrize(
    ("script", "says"),
    [
        ("echo nope >&2; exit 7\n", "exited 7: nope"),
        ("echo not json\n", "output is not JSON"),
        ('echo \'{"apiVersion":"client.authentication.k8s.io/v1","status":{}}\'\n', "no token"),
        (
            'echo \'{"apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"t"}}\'\n',
            "answered 'client.authentication.k8s.io/v1beta1'",
        ),
    ],
)
async def test_a_broken_exec_plugin_says_what(tmp_path: Path, script: str, says: str) -> None:
    _plugin(tmp_path, script)
    plugin = credentials.ExecPlugin(
        {"apiVersion": "client.authentication.k8s.io/v1", "command": str(tmp_path / "bin" / "plugin")},
        base=tmp_path,
        cluster={},
    )
    with pytest.raises(errors.TransportError, match=says):
        await plugin.header()


def test_an_exec_plugin_that_is_not_there_names_its_hint(tmp_path: Path) -> None:
    plugin = credentials.ExecPlugin(
        {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "no-such-plugin-anywhere",
            "installHint": "install it from example.com",
        },
        base=tmp_path,
        cluster={},
    )
    with pytest.raises(errors.UsageError, match=r"install it from example\.com"):
        asyncio.run(plugin.header())


pytestmark = pytest.mark.unit


def test_in_cluster_reads_the_service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, _ = _pair()
    (tmp_path / "ca.crt").write_bytes(cert)
    (tmp_path / "token").write_text("sa-token\n")
    monkeypatch.setattr(config, "SERVICE_CA_FILENAME", str(tmp_path / "ca.crt"))
    monkeypatch.setattr(config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "token"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    endpoint = config._in_cluster()
    assert endpoint.host == "https://[fd00::1]:6443"
    assert asyncio.run(endpoint.credentials.header()) == "Bearer sa-token"
    monkeypatch.setattr(config, "SERVICE_CA_FILENAME", str(tmp_path / "missing.crt"))
    with pytest.raises(errors.UsageError, match="service account's CA"):
        config._in_cluster()
