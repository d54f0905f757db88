"""One client certificate per operator process, signed by the cluster's CA.

The API server's audit log names the authenticated user of every write. Giving each
``sro run`` process a user of its own (``sro-fault-<n>``, in ``system:masters``) lets the
audit say which process sent which write, which is what "no write from a process after
another took the lease" is checked on. The fault proxy finds the same pair by CN and
presents it upstream, so going through the proxy changes nothing the audit sees.
"""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclasses.dataclass(frozen=True)
class Identity:
    """A client identity: its user name and the files a kubeconfig points at."""

    user: str
    cert: Path
    key: Path


def issue(*, pki: Path, out: Path, user: str) -> Identity:
    """A client pair for ``user`` (CN) in ``system:masters``, written as ``out/<user>.crt/.key``."""
    ca_cert = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
            x509.NameAttribute(NameOID.COMMON_NAME, user),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    out.mkdir(parents=True, exist_ok=True)
    identity = Identity(user=user, cert=out / f"{user}.crt", key=out / f"{user}.key")
    identity.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    identity.key.chmod(0o600)
    identity.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return identity


def kubeconfig(*, path: Path, identity: Identity, server: str, ca: Path) -> Path:
    """A kubeconfig reaching ``server`` (the API server or the fault proxy) as ``identity``."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fault", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [
            {
                "name": identity.user,
                "user": {"client-certificate": str(identity.cert), "client-key": str(identity.key)},
            }
        ],
        "contexts": [{"name": "fault", "context": {"cluster": "fault", "user": identity.user}}],
        "current-context": "fault",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
