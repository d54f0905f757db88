"""Generating the cluster's certificates and keys (ECDSA P-256: fast, accepted everywhere).

Kept apart from ``pki`` (paths and kubeconfigs) so that only ``up`` pays for
importing ``cryptography``.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from simcluster import pki


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
    )


def generate(material: pki.Pki) -> None:
    """Writes a CA, the apiserver's serving pair, client pairs and the service-account keys."""
    material.dir.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_name = _name("sro-local-ca")
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(material.ca_key, ca_key)
    material.ca_cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))

    def issue(cert_path: Path, key_path: Path, subject: x509.Name, *, server: bool) -> None:
        key = _key()
        builder = _builder(subject, ca_name, key.public_key()).add_extension(
            x509.BasicConstraints(ca=False, path_length=None), critical=True
        )
        if server:
            sans: list[x509.GeneralName] = [
                x509.DNSName(n)
                for n in (
                    "localhost",
                    "kubernetes",
                    "kubernetes.default",
                    "kubernetes.default.svc",
                    "kubernetes.default.svc.cluster.local",
                )
            ]
            sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in ("127.0.0.1", pki.SERVICE_IP)]
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
            usage = ExtendedKeyUsageOID.SERVER_AUTH
        else:
            usage = ExtendedKeyUsageOID.CLIENT_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        _write_key(key_path, key)
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    issue(material.serving_cert, material.serving_key, _name("kube-apiserver"), server=True)
    for who, (cn, org) in pki.CLIENTS.items():
        issue(material.client_cert(who), material.client_key(who), _name(cn, org), server=False)
    sa = _key()
    _write_key(material.sa_key, sa)
    material.sa_pub.write_bytes(
        sa.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
