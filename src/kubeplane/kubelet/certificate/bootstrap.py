"""Kubelet TLS bootstrapping: a node gets its client certificate (CN system:node:<name>,
O system:nodes) by creating a CertificateSigningRequest with a bootstrap credential and waiting
for the controller-manager to approve (csrapproving) and sign (csrsigning) it. The key never
leaves the node.

    cert_pem, key_pem = await load_or_request_client_cert(bootstrap_clientset, "node-0", cert_dir)

With a cert dir the pair is kept in <cert-dir>/kubelet-client-current.pem (certificate then key,
as upstream's) and reused while it is valid and issued by the cluster's CA.

Upstream: pkg/kubelet/certificate/bootstrap/bootstrap.go (LoadClientCert,
requestNodeCertificate, digestedName) and client-go util/certificate/csr/csr.go
(RequestCertificate, ensureCompatible, WaitForCertificate). Renewing it at 70-90 % of its life
is manager.py's.
"""
from __future__ import annotations

import asyncio
import base64
import datetime as dt
import logging
import pathlib
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ...api import errors
from ...client.clientset import Clientset
from ...utils.clock import REAL_CLOCK, Clock
from ...utils.files import make_private_dir, write_atomic

log = logging.getLogger(__name__)

SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
NODES_GROUP = "system:nodes"
USAGES = ["digital signature", "client auth"]        # an EC key: no key encipherment
CURRENT = "kubelet-client-current.pem"
WAIT_TIMEOUT = 3600.0                                 # upstream: 3600 s, then the kubelet restarts
SLOW_WARNING = 15.0                                   # say why a node waits, once


class BootstrapError(Exception):
    pass


def digested_name(public_key: Any, common_name: str, organizations: list[str], usages: list[str]) -> str:
    """node-csr-<SHA-512/256 of the key, subject and usages>: the same request gets the same
    name, so a restarted kubelet finds its pending CSR. Upstream: digestedName"""
    h = hashes.Hash(hashes.SHA512_256())

    def write(data: bytes) -> None:
        h.update(base64.urlsafe_b64encode(data).rstrip(b"="))
        h.update(b"|")     # not in the base64 URL alphabet: 'CN:foo,O:bar' and 'CN:foob,O:ar' differ
    write(public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))
    write(common_name.encode())
    for o in organizations:
        write(o.encode())
    for u in usages:
        write(u.encode())
    return "node-csr-" + base64.urlsafe_b64encode(h.finalize()).rstrip(b"=").decode()


def make_csr(key: ec.EllipticCurvePrivateKey, common_name: str, organizations: list[str]) -> bytes:
    """Upstream: certutil.MakeCSR"""
    subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations),
                         x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    req = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    return req.public_bytes(serialization.Encoding.PEM)


async def request_certificate(client: Clientset, csr_pem: bytes, name: str, signer: str,
                              usages: list[str]) -> tuple[str, str]:
    """Create the CSR (or take the one already made with this name, if it asks for the same
    thing): (name, uid). Upstream: csr.RequestCertificate"""
    csrs = client.certificates_v1().certificatesigningrequests()
    request = base64.b64encode(csr_pem).decode()
    body = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name}, "spec": {"request": request, "signerName": signer, "usages": usages}}
    try:
        got = await csrs.create(body)
    except errors.AlreadyExists:
        got = await csrs.get(name)
        if got.spec is None or got.spec.request != request or got.spec.signer_name != signer:
            raise BootstrapError(f"retrieved csr is not compatible: {name}") from None
    return got.metadata.name or name, got.metadata.uid or ""


def _issued(csr: Any, name: str, uid: str) -> bytes | None:
    """The certificate once approved and issued; BootstrapError if denied, failed or replaced."""
    if csr.metadata.uid != uid:
        raise BootstrapError(f'csr "{name}" changed UIDs')
    status = csr.status
    approved = False
    for c in (status.conditions if status else None) or []:
        if c.type == "Denied":
            raise BootstrapError(f"certificate signing request is denied, reason: {c.reason}, message: {c.message}")
        if c.type == "Failed":
            raise BootstrapError(f"certificate signing request failed, reason: {c.reason}, message: {c.message}")
        approved = approved or c.type == "Approved"
    if approved and status is not None and status.certificate:
        return base64.b64decode(status.certificate)
    return None


async def wait_for_certificate(client: Clientset, name: str, uid: str) -> bytes:
    """Watch the CSR until it is issued (its certificate PEM). Upstream: csr.WaitForCertificate"""
    csrs = client.certificates_v1().certificatesigningrequests()
    while True:
        csr = await csrs.get(name)
        cert = _issued(csr, name, uid)
        if cert is not None:
            return cert
        async for ev in csrs.watch(resource_version=csr.metadata.resource_version or "",
                                   field_selector=f"metadata.name={name}"):
            if ev.type == "DELETED":
                raise BootstrapError(f'csr "{name}" was deleted')
            if ev.type in ("ADDED", "MODIFIED"):
                cert = _issued(ev.obj, name, uid)
                if cert is not None:
                    return cert


async def request_node_certificate(client: Clientset, node: str, *, timeout: float = WAIT_TIMEOUT) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) for system:node:<node>, from a fresh P-256 key.
    Upstream: requestNodeCertificate"""
    key = ec.generate_private_key(ec.SECP256R1())
    cn, orgs = f"system:node:{node}", [NODES_GROUP]
    name, uid = await request_certificate(client, make_csr(key, cn, orgs),
                                          digested_name(key.public_key(), cn, orgs, USAGES), SIGNER, USAGES)
    log.info("Waiting for client certificate to be issued", extra={"node": node, "csr": name})
    waiting = asyncio.ensure_future(wait_for_certificate(client, name, uid))
    try:
        done, _ = await asyncio.wait({waiting}, timeout=min(SLOW_WARNING, timeout))
        if not done:
            log.warning("Still waiting for the client certificate of node %s (CSR %s): is a controller-manager "
                        "approving and signing CertificateSigningRequests?", node, name)
        cert = await asyncio.wait_for(waiting, max(0.0, timeout - SLOW_WARNING))
    except TimeoutError:
        raise BootstrapError(f"timed out waiting for CSR {name} to be issued") from None
    finally:
        waiting.cancel()
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert, key_pem


def load_client_cert(path: pathlib.Path, node: str, ca_pem: bytes | None, clock: Clock = REAL_CLOCK
                     ) -> tuple[bytes, bytes] | None:
    """A kept pair that still serves: it parses, names the node, is within its validity, and
    was issued by the cluster's CA (a data dir made anew has a new CA). Upstream: LoadClientCert,
    isClientConfigStillValid."""
    end = b"-----END CERTIFICATE-----\n"
    try:
        data = path.read_bytes()
        cert_pem, key_pem = data[:data.index(end) + len(end)], data[data.index(end) + len(end):]
        cert = x509.load_pem_x509_certificate(cert_pem)
        key = serialization.load_pem_private_key(key_pem, None)
    except (OSError, ValueError, TypeError):
        return None
    now = dt.datetime.fromtimestamp(clock.now(), dt.UTC)
    cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not cns or cns[-1].value != f"system:node:{node}" or not cert.not_valid_before_utc <= now < cert.not_valid_after_utc:
        return None
    if cert.public_key() != key.public_key():
        return None
    if ca_pem:
        try:
            cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca_pem))
        except (ValueError, TypeError, InvalidSignature):
            return None
    return cert_pem, key_pem


async def load_or_request_client_cert(client: Clientset, node: str, cert_dir: pathlib.Path | None,
                                      ca_pem: bytes | None = None) -> tuple[bytes, bytes]:
    """The node's client certificate and key: kept in cert_dir, else requested (and kept)."""
    path = cert_dir / CURRENT if cert_dir is not None else None
    if path is not None:
        kept = load_client_cert(path, node, ca_pem)
        if kept is not None:
            return kept
    cert, key = await request_node_certificate(client, node)
    keep(cert_dir, cert, key)
    return cert, key


def keep(cert_dir: pathlib.Path | None, cert: bytes, key: bytes) -> None:
    """Write the pair to <cert_dir>/kubelet-client-current.pem (nothing without a cert dir)."""
    if cert_dir is not None:
        make_private_dir(cert_dir)
        write_atomic(cert_dir / CURRENT, cert + key)

