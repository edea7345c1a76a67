"""TLS material for a secure-by-default control plane: a CA, a serving certificate, client
certificates, and the static token file.

Generated once into the data dir (EC P-256: fast to make, fast handshakes) and reused on
restart, so kubeconfigs written earlier stay valid. Every file is 0600 in a 0700 pki/
(public certificates too: nothing here needs to be read by another user). A layer below
the API server and the kubelet, which both make serving certificates.

    pki/ca.crt, ca.key            the cluster CA (also --client-ca-file's default)
    pki/server.crt, server.key    the API server's serving certificate
    pki/admin.crt, admin.key      the admin's client certificate: CN kubernetes-admin,
                                  O kubeadm:cluster-admins (kubeadm's and kind's admin.conf user)
    pki/admin.token, tokens.csv   the admin's bearer token and --token-auth-file's default
                                  (upstream's CSV: token,user,uid,"groups"), the same user
    pki/controller-manager.crt/.key, scheduler.crt/.key
                                  the standalone components' client certificates, with their
                                  upstream users (CN system:kube-controller-manager,
                                  system:kube-scheduler), in `up`'s DIR/<component>.conf
A data dir made before the client certificates existed gets them (and tokens.csv) at the next start.
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


ADMIN_USER = "kubernetes-admin"                  # kubeadm's admin.conf user
ADMIN_GROUP = "kubeadm:cluster-admins"           # bound to cluster-admin (kubeadm, RBAC bootstrap)
# The bearer token's user is also in system:masters, as kubeadm's super-admin.conf: it stays an
# administrator whatever happens to the RBAC objects (the certificate's user needs its binding).
TOKEN_GROUP = "system:masters"
# Each standalone component's client certificate: pki/<name>.crt/.key -> (CN, O), as kubeadm's
# controller-manager.conf and scheduler.conf.
COMPONENTS: dict[str, tuple[str, list[str]]] = {"controller-manager": ("system:kube-controller-manager", []),
              "scheduler": ("system:kube-scheduler", [])}


@dataclass(frozen=True)
class PKI:
    ca_cert: pathlib.Path
    server_cert: pathlib.Path
    server_key: pathlib.Path
    token: str
    admin_cert: pathlib.Path | None = None
    admin_key: pathlib.Path | None = None
    token_file: pathlib.Path | None = None


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
    """Load or create ca.crt, server.crt/key, the admin's client certificate and token, and
    tokens.csv under data_dir/pki."""
    pki = data_dir / "pki"
    make_private_dir(pki)
    paths = PKI(pki / "ca.crt", pki / "server.crt", pki / "server.key", "", pki / "admin.crt", pki / "admin.key",
                pki / "tokens.csv")
    token_path = pki / "admin.token"
    if not (paths.ca_cert.exists() and paths.server_cert.exists() and paths.server_key.exists() and token_path.exists()):
        _generate(pki, paths, hosts)
        write_atomic(token_path, secrets.token_urlsafe(32).encode())
    token = token_path.read_text().strip()
    assert paths.admin_cert is not None and paths.admin_key is not None and paths.token_file is not None
    if not (paths.admin_cert.exists() and paths.admin_key.exists()):
        write_client_cert(pki, "admin", ADMIN_USER, [ADMIN_GROUP])
    for name, (cn, orgs) in COMPONENTS.items():
        if not ((pki / f"{name}.crt").exists() and (pki / f"{name}.key").exists()):
            write_client_cert(pki, name, cn, orgs)
    if not paths.token_file.exists():
        write_atomic(paths.token_file, f'{token},{ADMIN_USER},,"{ADMIN_GROUP},{TOKEN_GROUP}"\n'.encode())
    return PKI(paths.ca_cert, paths.server_cert, paths.server_key, token, paths.admin_cert, paths.admin_key,
               paths.token_file)


def client_cert(common_name: str, organizations: list[str], issuer: x509.Certificate,
                issuer_key: ec.EllipticCurvePrivateKey) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) of a fresh EC client certificate (extendedKeyUsage clientAuth)
    naming a user: CN the name, O the groups, as upstream's x509 authenticator reads them."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations),
                         x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + VALIDITY)
            .add_extension(x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(issuer_key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def load_ca(pki: pathlib.Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """The cluster CA's certificate and key (pki/ca.crt, pki/ca.key), to sign client certificates."""
    ca = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    return ca, ca_key


def write_client_cert(pki: pathlib.Path, name: str, common_name: str, organizations: list[str]) -> None:
    """pki/<name>.crt and .key (0600): a client certificate signed by pki/ca.key."""
    cert, key = client_cert(common_name, organizations, *load_ca(pki))
    write_atomic(pki / f"{name}.key", key)
    write_atomic(pki / f"{name}.crt", cert)


def ca_certificate(name: str, key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    """A self-signed CA certificate for key."""
    return (_builder(name, None, key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .sign(key, hashes.SHA256()))


def serving_cert(subject: str, hosts: list[str], issuer: x509.Certificate | None = None,
                 issuer_key: ec.EllipticCurvePrivateKey | None = None, *,
                 client_auth: bool = False) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) of a fresh EC serving certificate for hosts (IPs and DNS
    names), signed by issuer/issuer_key, or self-signed when none is given; client_auth also
    lets it authenticate as a client (an etcd member's certificate, used towards its peers)."""
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for h in dict.fromkeys(hosts):
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))
    cert = (_builder(subject, issuer.subject if issuer else None, key.public_key())
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  *([ExtendedKeyUsageOID.CLIENT_AUTH] if client_auth else [])]),
                           critical=False)
            .sign(issuer_key or key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def _generate(pki: pathlib.Path, paths: PKI, hosts: list[str]) -> None:
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = ca_certificate("kubeplane-ca", ca_key)
    # upstream's apiserver certificate names (kubeadm's certs phase): the kubernetes Service's DNS
    # names, and (in hosts, from up) its ClusterIP, so pods reach the API server either way.
    cert, key = serving_cert("kube-apiserver", ["localhost", "127.0.0.1", "::1", "kubernetes", "kubernetes.default",
                                                "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
                                                *hosts], ca, ca_key)
    write_atomic(pki / "ca.key", _key_pem(ca_key))
    write_atomic(paths.ca_cert, ca.public_bytes(serialization.Encoding.PEM))
    write_atomic(paths.server_key, key)
    write_atomic(paths.server_cert, cert)
