"""csrsigning: signs every approved CertificateSigningRequest of the four kubernetes.io
signers with the cluster CA (--cluster-signing-cert-file / --cluster-signing-key-file), after
checking the request fits its signer (a kubelet client certificate must name a node, …); a
request that does not fit gets a Failed condition instead.

    signers = new_csr_signing_controllers(client, factory.certificates_v1().certificatesigningrequests(),
                                          load_ca(cert_pem, key_pem))

The CA is read once at start (upstream reloads changed files).

Upstream: pkg/controller/certificates/signer/signer.go (NewCSRSigningController, signer.handle,
sign, duration, getCSRVerificationFuncForSignerName), authority/authority.go
(CertificateAuthority.Sign) and authority/policies.go (PermissiveSigningPolicy,
keyUsagesFromStrings).
"""
from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass
from typing import Any, Callable

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from ....api.types import certificates_v1
from ....client.clientset import Clientset
from ....client.informers import ResourceInformer
from ....client.listers import CertificateSigningRequestLister
from ....utils.clock import REAL_CLOCK, Clock
from .. import helpers
from ..certificate_controller import CertificateController, has_true_condition, is_certificate_request_approved

CSR = certificates_v1.CertificateSigningRequest

DEFAULT_DURATION = 365 * 24 * 3600.0      # --cluster-signing-duration's default, 8760h
BACKDATE = 5 * 60.0                        # must stay below the shortest lifetime granted (10 min)
SHORT = 8 * 3600.0                         # a shorter lifetime is not backdated at its end
MIN_DURATION = 10 * 60.0                   # 2 x the backdate: spec.expirationSeconds' floor

# The controllers kube-controller-manager's csrsigning starts, one per signer.
SIGNERS = {
    helpers.KUBELET_SERVING_SIGNER: "csrsigning-kubelet-serving",
    helpers.KUBE_APISERVER_CLIENT_KUBELET_SIGNER: "csrsigning-kubelet-client",
    helpers.KUBE_APISERVER_CLIENT_SIGNER: "csrsigning-kube-apiserver-client",
    helpers.LEGACY_UNKNOWN_SIGNER: "csrsigning-legacy-unknown",
}

_KEY_USAGES = {      # usage -> x509.KeyUsage argument
    "signing": "digital_signature", "digital signature": "digital_signature",
    "content commitment": "content_commitment", "key encipherment": "key_encipherment",
    "key agreement": "key_agreement", "data encipherment": "data_encipherment", "cert sign": "key_cert_sign",
    "crl sign": "crl_sign", "encipher only": "encipher_only", "decipher only": "decipher_only",
}
_EXT_KEY_USAGES = {  # usage -> (Go's x509.ExtKeyUsage order, OID)
    "any": (0, ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE),
    "server auth": (1, ExtendedKeyUsageOID.SERVER_AUTH), "client auth": (2, ExtendedKeyUsageOID.CLIENT_AUTH),
    "code signing": (3, ExtendedKeyUsageOID.CODE_SIGNING),
    "email protection": (4, ExtendedKeyUsageOID.EMAIL_PROTECTION), "s/mime": (4, ExtendedKeyUsageOID.EMAIL_PROTECTION),
    "ipsec end system": (5, x509.ObjectIdentifier("1.3.6.1.5.5.7.3.5")),
    "ipsec tunnel": (6, x509.ObjectIdentifier("1.3.6.1.5.5.7.3.6")),
    "ipsec user": (7, x509.ObjectIdentifier("1.3.6.1.5.5.7.3.7")),
    "timestamping": (8, ExtendedKeyUsageOID.TIME_STAMPING), "ocsp signing": (9, ExtendedKeyUsageOID.OCSP_SIGNING),
    "microsoft sgc": (10, x509.ObjectIdentifier("1.3.6.1.4.1.311.10.3.3")),
    "netscape sgc": (11, x509.ObjectIdentifier("2.16.840.1.113730.4.1")),
}


class SigningError(Exception):
    pass


def key_usages_from_strings(usages: list[str]) -> tuple[x509.KeyUsage | None, list[x509.ObjectIdentifier]]:
    """(keyUsage extension or None, extended key usages in Go's order). Upstream: keyUsagesFromStrings"""
    bits: dict[str, bool] = {}
    ext: dict[int, x509.ObjectIdentifier] = {}
    unrecognized: list[str] = []
    for u in usages:
        if u in _KEY_USAGES:
            bits[_KEY_USAGES[u]] = True
        elif u in _EXT_KEY_USAGES:
            order, oid = _EXT_KEY_USAGES[u]
            ext[order] = oid
        else:
            unrecognized.append(u)
    if unrecognized:
        raise SigningError("unrecognized usage values: [" + " ".join(f'"{u}"' for u in unrecognized) + "]")
    key_usage = None
    if bits:
        args = {name: bits.get(name, False) for name in set(_KEY_USAGES.values())}
        key_usage = x509.KeyUsage(**args)
    return key_usage, [ext[k] for k in sorted(ext)]


@dataclass(frozen=True)
class CertificateAuthority:
    """Upstream: authority.CertificateAuthority"""
    certificate: x509.Certificate
    private_key: Any

    def sign(self, req: x509.CertificateSigningRequest, usages: list[str], ttl: float, now: dt.datetime) -> x509.Certificate:
        """Upstream: CertificateAuthority.Sign with PermissiveSigningPolicy — the request's
        subject and SANs, the given usages, no other extension, not a CA; NotBefore backdated,
        NotAfter within the CA's."""
        ca_not_after = self.certificate.not_valid_after_utc
        if not req.is_signature_valid:
            raise SigningError("unable to verify certificate request signature")
        key_usage, ext_usages = key_usages_from_strings(usages)
        not_before = now - dt.timedelta(seconds=BACKDATE)
        not_after = now + dt.timedelta(seconds=ttl if ttl < SHORT else ttl - BACKDATE)
        if not not_after < ca_not_after:
            not_after = ca_not_after
        if not not_before < ca_not_after:
            raise SigningError(f"the signer has expired: NotAfter={ca_not_after}")
        if not now < ca_not_after:
            raise SigningError(f"refusing to sign a certificate that expired in the past: NotAfter={ca_not_after}")
        builder = (x509.CertificateBuilder().subject_name(req.subject).issuer_name(self.certificate.subject)
                   .public_key(req.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(not_before).not_valid_after(not_after)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True))
        if key_usage is not None:
            builder = builder.add_extension(key_usage, critical=True)
        if ext_usages:
            builder = builder.add_extension(x509.ExtendedKeyUsage(ext_usages), critical=False)
        try:
            sans = req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            builder = builder.add_extension(sans, critical=False)
        except x509.ExtensionNotFound:
            pass
        try:       # Go's CreateCertificate: the parent's SubjectKeyId, when it has one
            ski = self.certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
            builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski),
                                            critical=False)
        except x509.ExtensionNotFound:
            pass
        algorithm = None if isinstance(self.private_key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
        return builder.sign(self.private_key, algorithm)


def load_ca(cert_pem: bytes, key_pem: bytes) -> CertificateAuthority:
    """The CA of --cluster-signing-cert-file/--cluster-signing-key-file; ValueError if unusable."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    key = serialization.load_pem_private_key(key_pem, password=None)
    if not isinstance(key, (ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey, ed25519.Ed25519PrivateKey)):
        raise ValueError("unsupported CA key type")
    return CertificateAuthority(cert, key)


RequestCheck = Callable[[x509.CertificateSigningRequest, list[str], str], bool]


def _is_kubelet_serving(req: x509.CertificateSigningRequest, usages: list[str], signer: str) -> bool:
    if signer != helpers.KUBELET_SERVING_SIGNER:
        return False
    helpers.validate_kubelet_serving_csr(req, set(usages))
    return True


def _is_kubelet_client(req: x509.CertificateSigningRequest, usages: list[str], signer: str) -> bool:
    if signer != helpers.KUBE_APISERVER_CLIENT_KUBELET_SIGNER:
        return False
    helpers.validate_kubelet_client_csr(req, set(usages))
    return True


def _is_kube_apiserver_client(req: x509.CertificateSigningRequest, usages: list[str], signer: str) -> bool:
    """Upstream: isKubeAPIServerClient with validAPIServerClientUsages"""
    if signer != helpers.KUBE_APISERVER_CLIENT_SIGNER:
        return False
    for u in usages:
        if u not in ("digital signature", "key encipherment", "client auth"):
            raise helpers.CSRError(f"invalid usage for client certificate: {u}")
    if "client auth" not in usages:
        raise helpers.CSRError("missing required usage for client certificate: client auth")
    return True


def _is_legacy_unknown(req: x509.CertificateSigningRequest, usages: list[str], signer: str) -> bool:
    return signer == helpers.LEGACY_UNKNOWN_SIGNER      # no restrictions, for v1beta1's compatibility


REQUEST_CHECKS: dict[str, RequestCheck] = {
    helpers.KUBELET_SERVING_SIGNER: _is_kubelet_serving,
    helpers.KUBE_APISERVER_CLIENT_KUBELET_SIGNER: _is_kubelet_client,
    helpers.KUBE_APISERVER_CLIENT_SIGNER: _is_kube_apiserver_client,
    helpers.LEGACY_UNKNOWN_SIGNER: _is_legacy_unknown,
}


class Signer:
    """One signer name's handler. Upstream: signer"""

    def __init__(self, signer_name: str, client: Clientset, ca: CertificateAuthority, *,
                 cert_ttl: float = DEFAULT_DURATION, clock: Clock = REAL_CLOCK) -> None:
        if signer_name not in REQUEST_CHECKS:
            raise ValueError(f'unrecognized signerName: "{signer_name}"')
        self.signer_name, self.client, self.ca, self.cert_ttl, self.clock = signer_name, client, ca, cert_ttl, clock
        self.is_request_for_signer = REQUEST_CHECKS[signer_name]

    async def handle(self, csr: CSR) -> None:
        """Upstream: signer.handle"""
        if not is_certificate_request_approved(csr) or has_true_condition(csr, "Failed"):
            return
        spec = csr.spec or certificates_v1.CertificateSigningRequestSpec()
        if spec.signer_name != self.signer_name:
            return
        try:
            x509cr = helpers.parse_csr(helpers.request_bytes(csr))
        except helpers.CSRError as err:
            raise ValueError(f'unable to parse csr "{csr.metadata.name}": {err}') from None
        usages = list(spec.usages or [])
        try:
            recognized = self.is_request_for_signer(x509cr, usages, spec.signer_name)
        except helpers.CSRError as err:
            await self._fail(csr, str(err))
            return
        if not recognized:
            return
        try:
            cert = self.sign(x509cr, usages, spec.expiration_seconds)
        except SigningError as err:
            raise RuntimeError(f"error auto signing csr: {err}") from None
        assert csr.status is not None            # approved: it has conditions
        csr.status.certificate = base64.b64encode(cert).decode()
        try:
            await self.client.certificates_v1().certificatesigningrequests().update_status(csr)
        except Exception as err:
            raise RuntimeError(f"error updating signature for csr: {err}") from err

    async def _fail(self, csr: CSR, message: str) -> None:
        assert csr.status is not None
        now = dt.datetime.fromtimestamp(self.clock.now(), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        csr.status.conditions = [*(csr.status.conditions or []), certificates_v1.CertificateSigningRequestCondition(
            type="Failed", status="True", reason="SignerValidationFailure", message=message, last_update_time=now)]
        try:
            await self.client.certificates_v1().certificatesigningrequests().update_status(csr)
        except Exception as err:
            raise RuntimeError(f"error adding failure condition for csr: {err}") from err

    def sign(self, x509cr: x509.CertificateSigningRequest, usages: list[str], expiration_seconds: int | None) -> bytes:
        """The certificate PEM. Upstream: signer.sign"""
        now = dt.datetime.fromtimestamp(self.clock.now(), dt.UTC)
        cert = self.ca.sign(x509cr, usages, self.duration(expiration_seconds), now)
        return cert.public_bytes(serialization.Encoding.PEM)

    def duration(self, expiration_seconds: int | None) -> float:
        """spec.expirationSeconds between 10 minutes and the signer's TTL. Upstream: signer.duration"""
        if expiration_seconds is None:
            return self.cert_ttl
        return min(self.cert_ttl, max(MIN_DURATION, float(expiration_seconds)))


def new_csr_signing_controllers(client: Clientset, csr_informer: ResourceInformer[CertificateSigningRequestLister],
                                ca: CertificateAuthority, *, cert_ttl: float = DEFAULT_DURATION,
                                clock: Clock = REAL_CLOCK) -> list[CertificateController]:
    """One controller per kubernetes.io signer, all with the same CA (kube-controller-manager's
    --cluster-signing-cert-file/--cluster-signing-key-file). Upstream: startCSRSigningController"""
    return [CertificateController(name, client, csr_informer,
                                  Signer(signer_name, client, ca, cert_ttl=cert_ttl, clock=clock).handle, clock=clock)
            for signer_name, name in SIGNERS.items()]
