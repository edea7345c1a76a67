"""Test CSRs: upstream's csrBuilder / makeFancyTestCsr (approver/sarapprove_test.go)."""
from __future__ import annotations

import base64
import ipaddress
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubeplane.api import types
from kubeplane.api.types import certificates_v1

KUBELET_CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"
KEY = ec.generate_private_key(ec.SECP256R1())        # one key for every test CSR: making keys is slow


@dataclass
class CSRBuilder:
    cn: str = "system:node:foo"
    orgs: list[str] = field(default_factory=lambda: ["system:nodes"])
    requestor: str = "system:node:foo"
    usages: list[str] = field(default_factory=lambda: ["key encipherment", "digital signature", "client auth"])
    signer_name: str = KUBELET_CLIENT
    dns: list[str] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    ips: list[str] = field(default_factory=list)


def request_pem(b: CSRBuilder, key: Any = KEY) -> bytes:
    names = [*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in b.orgs)]
    if b.cn:
        names.append(x509.NameAttribute(NameOID.COMMON_NAME, b.cn))
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(names))
    sans: list[x509.GeneralName] = [*(x509.DNSName(d) for d in b.dns), *(x509.RFC822Name(e) for e in b.emails),
                                    *(x509.IPAddress(ipaddress.ip_address(i)) for i in b.ips)]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def make_csr(b: CSRBuilder, name: str = "test-csr", conditions: list[dict[str, Any]] | None = None,
             certificate: bytes = b"", key: Any = KEY) -> certificates_v1.CertificateSigningRequest:
    obj: dict[str, Any] = {
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
        "spec": {"username": b.requestor, "usages": b.usages, "signerName": b.signer_name,
                 "request": base64.b64encode(request_pem(b, key)).decode()}}
    if conditions or certificate:
        obj["status"] = {"conditions": conditions or []}
        if certificate:
            obj["status"]["certificate"] = base64.b64encode(certificate).decode()
    return types.from_dict(obj, certificates_v1.CertificateSigningRequest)


def approved() -> list[dict[str, Any]]:
    return [{"type": "Approved", "status": "True", "reason": "test"}]


def key_pem(key: Any = KEY) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


async def seed(cs: Any, csr: certificates_v1.CertificateSigningRequest) -> certificates_v1.CertificateSigningRequest:
    """Store csr as the API takes it: the spec by create, Approved/Denied through /approval,
    the rest of the status through /status (none of it recorded)."""
    status = csr.status
    client = cs.certificates_v1().certificatesigningrequests()
    cs.recorder.recording = False
    try:
        d = types.to_dict(csr)
        d.pop("status", None)
        stored = await client.create(d)
        conditions = list((status.conditions if status else None) or [])
        approval = [c for c in conditions if c.type in ("Approved", "Denied")]
        if approval:
            stored.status = certificates_v1.CertificateSigningRequestStatus(conditions=approval)
            stored = await client.update_approval(stored)
        rest = [c for c in conditions if c.type not in ("Approved", "Denied")]
        if rest or (status and status.certificate):
            stored.status = certificates_v1.CertificateSigningRequestStatus(
                conditions=[*approval, *rest], certificate=status.certificate if status else None)
            stored = await client.update_status(stored)
    finally:
        cs.recorder.recording = True
    return stored
