"""TLS material for a secure-by-default control plane: a CA and a serving certificate.

Generated once into the data dir (EC P-256: fast to make, fast handshakes) and reused on
restart, so kubeconfigs written earlier stay valid. Every file is 0600 in a 0700 pki/
(public certificates too: nothing here needs to be read by another user). A layer below
the API server and the kubelet, which both make serving certificates.
"""
from __future__ import annotations

import datetime as dt
import ipaddress
import pathlib
import secrets
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from .files import make_private_dir, write_atomic

VALIDITY = dt.timedelta(days=365 * 10)


@dataclass(frozen=True)
class PKI:
    ca_cert: pathlib.Path
    server_cert: pathlib.Path
    server_key: pathlib.Path
    token: str


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _builder(subject: str, issuer: x509.Name | None, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    return (x509.CertificateBuilder().subject_name(name).issuer_name(issuer or name)
            .public_key(public_key).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + VALIDITY))


def ensure_pki(data_dir: pathlib.Path, hosts: list[str]) -> PKI:
    """Load or create ca.crt, server.crt/key and the admin token under data_dir/pki."""
    pki = data_dir / "pki"
    make_private_dir(pki)
    paths = PKI(pki / "ca.crt", pki / "server.crt", pki / "server.key", "")
    token_path = pki / "admin.token"
    if not (paths.ca_cert.exists() and paths.server_cert.exists() and paths.server_key.exists() and token_path.exists()):
        _generate(pki, paths, hosts)
        write_atomic(token_path, secrets.token_urlsafe(32).encode())
    return PKI(paths.ca_cert, paths.server_cert, paths.server_key, token_path.read_text().strip())


def serving_cert(subject: str, hosts: list[str], issuer: x509.Certificate | None = None,
                 issuer_key: ec.EllipticCurvePrivateKey | None = None) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) of a fresh EC serving certificate for hosts (IPs and DNS
    names), signed by issuer/issuer_key, or self-signed when none is given."""
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for h in dict.fromkeys(hosts):
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))
    cert = (_builder(subject, issuer.subject if issuer else None, key.public_key())
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(issuer_key or key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def _generate(pki: pathlib.Path, paths: PKI, hosts: list[str]) -> None:
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (_builder("kubeplane-ca", None, ca_key.public_key())
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    cert, key = serving_cert("kube-apiserver", ["localhost", "127.0.0.1", "::1", "kubernetes", "kubernetes.default",
                                                *hosts], ca, ca_key)
    write_atomic(pki / "ca.key", _key_pem(ca_key))
    write_atomic(paths.ca_cert, ca.public_bytes(serialization.Encoding.PEM))
    write_atomic(paths.server_key, key)
    write_atomic(paths.server_cert, cert)
