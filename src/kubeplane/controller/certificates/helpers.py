"""Reading a CertificateSigningRequest's PEM request and recognising a kubelet's client
certificate request. Upstream: pkg/apis/certificates/helpers.go (ParseCSR,
ValidateKubeletClientCSR, IsKubeletClientCSR, ValidateKubeletServingCSR)."""
from __future__ import annotations

import base64
import binascii

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from ...api.types import certificates_v1

KUBE_APISERVER_CLIENT_KUBELET_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
KUBE_APISERVER_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"
KUBELET_SERVING_SIGNER = "kubernetes.io/kubelet-serving"
LEGACY_UNKNOWN_SIGNER = "kubernetes.io/legacy-unknown"
NODES_GROUP = "system:nodes"
NODE_USER_PREFIX = "system:node:"

KUBELET_CLIENT_USAGES = frozenset({"digital signature", "key encipherment", "client auth"})
KUBELET_CLIENT_USAGES_NO_RSA = frozenset({"digital signature", "client auth"})
KUBELET_SERVING_USAGES = frozenset({"digital signature", "key encipherment", "server auth"})
KUBELET_SERVING_USAGES_NO_RSA = frozenset({"digital signature", "server auth"})


class CSRError(ValueError):
    pass


def request_bytes(csr: certificates_v1.CertificateSigningRequest) -> bytes:
    """spec.request: base64 on the wire (Go's []byte)."""
    try:
        return base64.b64decode((csr.spec.request if csr.spec else None) or "", validate=True)
    except (binascii.Error, ValueError):
        return b""


def parse_csr(pem: bytes) -> x509.CertificateSigningRequest:
    """The first PEM block, which must be a CERTIFICATE REQUEST. Upstream: ParseCSR"""
    start = pem.find(b"-----BEGIN ")
    if start < 0 or not pem[start:].startswith(b"-----BEGIN CERTIFICATE REQUEST-----"):
        raise CSRError("PEM block type must be CERTIFICATE REQUEST")
    try:
        return x509.load_pem_x509_csr(pem[start:])
    except ValueError as err:
        raise CSRError(str(err)) from None


def organizations(req: x509.CertificateSigningRequest) -> list[str]:
    return [str(a.value) for a in req.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]


def common_name(req: x509.CertificateSigningRequest) -> str:
    cns = req.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(cns[-1].value) if cns else ""        # Go's pkix.Name: the last one wins


def _sans(req: x509.CertificateSigningRequest) -> x509.SubjectAlternativeName | None:
    try:
        return req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None


def validate_kubelet_client_csr(req: x509.CertificateSigningRequest, usages: set[str] | frozenset[str]) -> None:
    """Raise CSRError unless req is a kubelet client certificate request (O system:nodes only,
    no SANs, CN system:node:*, the kubelet client usages). Upstream: ValidateKubeletClientCSR"""
    if organizations(req) != [NODES_GROUP]:
        raise CSRError("subject organization is not system:nodes")
    sans = _sans(req)
    if sans is not None:
        for kind, message in ((x509.DNSName, "DNS subjectAltNames are not allowed"),
                              (x509.RFC822Name, "Email subjectAltNames are not allowed"),
                              (x509.IPAddress, "IP subjectAltNames are not allowed"),
                              (x509.UniformResourceIdentifier, "URI subjectAltNames are not allowed")):
            if sans.get_values_for_type(kind):
                raise CSRError(message)
    if not common_name(req).startswith(NODE_USER_PREFIX):
        raise CSRError("subject common name does not begin with system:node:")
    if set(usages) not in (KUBELET_CLIENT_USAGES, KUBELET_CLIENT_USAGES_NO_RSA):
        raise CSRError(f"usages did not match {sorted(KUBELET_CLIENT_USAGES)}".replace("'", "").replace(",", ""))


def is_kubelet_client_csr(req: x509.CertificateSigningRequest, usages: set[str] | frozenset[str]) -> bool:
    """Upstream: IsKubeletClientCSR"""
    try:
        validate_kubelet_client_csr(req, usages)
    except CSRError:
        return False
    return True


def validate_kubelet_serving_csr(req: x509.CertificateSigningRequest, usages: set[str] | frozenset[str]) -> None:
    """Upstream: ValidateKubeletServingCSR"""
    if organizations(req) != [NODES_GROUP]:
        raise CSRError("subject organization is not system:nodes")
    sans = _sans(req)
    dns = sans.get_values_for_type(x509.DNSName) if sans else []
    ips = sans.get_values_for_type(x509.IPAddress) if sans else []
    if not dns and not ips:
        raise CSRError("DNS or IP subjectAltName is required")
    if sans is not None and sans.get_values_for_type(x509.RFC822Name):
        raise CSRError("Email subjectAltNames are not allowed")
    if sans is not None and sans.get_values_for_type(x509.UniformResourceIdentifier):
        raise CSRError("URI subjectAltNames are not allowed")
    if set(usages) not in (KUBELET_SERVING_USAGES, KUBELET_SERVING_USAGES_NO_RSA):
        raise CSRError(f"usages did not match {sorted(KUBELET_SERVING_USAGES)}".replace("'", "").replace(",", ""))
    if not common_name(req).startswith(NODE_USER_PREFIX):
        raise CSRError("subject common name does not begin with system:node:")


def is_rsa(req: x509.CertificateSigningRequest) -> bool:
    return isinstance(req.public_key(), rsa.RSAPublicKey)
