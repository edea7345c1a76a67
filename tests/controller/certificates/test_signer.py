"""csrsigning: upstream's TestSigner, TestHandle and TestDurationFromExpirationSeconds cases
(signer/signer_test.go) on a fresh CA, and the signing controllers through run()."""
from __future__ import annotations

import asyncio
import base64
import datetime as dt
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubeplane.client.informers import SharedInformerFactory
from kubeplane.controller.certificates import helpers
from kubeplane.controller.certificates.signer import load_ca, new_csr_signing_controllers
from kubeplane.controller.certificates.signer.signer import Signer, SigningError, key_usages_from_strings
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock

from .csrs import KUBELET_CLIENT, CSRBuilder, approved, make_csr, request_pem, seed

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
CA_KEY = ec.generate_private_key(ec.SECP256R1())


def ca_pem(not_after: dt.datetime = NOW + dt.timedelta(days=3650)) -> bytes:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-ca")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(CA_KEY.public_key())
            .serial_number(1).not_valid_before(NOW - dt.timedelta(days=1)).not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(CA_KEY.public_key()), critical=False)
            .sign(CA_KEY, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM)


def key_pem() -> bytes:
    return CA_KEY.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())


def signer(cs: Any = None, signer_name: str = KUBELET_CLIENT, ttl: float = 3600.0, ca: bytes | None = None) -> Signer:
    return Signer(signer_name, cs, load_ca(ca or ca_pem(), key_pem()), cert_ttl=ttl, clock=FakeClock(NOW.timestamp()))


def test_signer() -> None:
    """Upstream: TestSigner — the request's subject and SANs, the given usages, not a CA,
    NotBefore 5 minutes back, NotAfter now + TTL (short: not backdated)."""
    s = signer()
    req = helpers.parse_csr(request_pem(CSRBuilder(cn="system:node:foo", dns=["foo.example.com"], ips=["10.0.0.1"])))
    cert = x509.load_pem_x509_certificate(s.sign(req, ["signing", "key encipherment", "server auth", "client auth"], None))
    assert cert.subject == req.subject
    assert cert.issuer.rfc4514_string() == "CN=test-ca"
    assert cert.not_valid_before_utc == NOW - dt.timedelta(minutes=5)
    assert cert.not_valid_after_utc == NOW + dt.timedelta(hours=1)
    ku = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert (ku.digital_signature, ku.key_encipherment, ku.key_cert_sign) == (True, True, False)
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    bc = cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert bc.critical and bc.value.ca is False
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["foo.example.com"]
    assert [str(i) for i in sans.get_values_for_type(x509.IPAddress)] == ["10.0.0.1"]
    aki = cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    assert aki.key_identifier == x509.SubjectKeyIdentifier.from_public_key(CA_KEY.public_key()).digest
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca_pem()))


def test_a_long_lifetime_is_backdated_and_cut_at_the_ca_s_end() -> None:
    cert = x509.load_pem_x509_certificate(signer(ttl=24 * 3600.0).sign(
        helpers.parse_csr(request_pem(CSRBuilder())), ["client auth"], None))
    assert cert.not_valid_after_utc == NOW + dt.timedelta(hours=24) - dt.timedelta(minutes=5)
    short_ca = ca_pem(NOW + dt.timedelta(hours=2))
    cert = x509.load_pem_x509_certificate(signer(ttl=24 * 3600.0, ca=short_ca).sign(
        helpers.parse_csr(request_pem(CSRBuilder())), ["client auth"], None))
    assert cert.not_valid_after_utc == NOW + dt.timedelta(hours=2)
    req = helpers.parse_csr(request_pem(CSRBuilder()))
    with pytest.raises(SigningError, match="the signer has expired"):
        signer(ca=ca_pem(NOW - dt.timedelta(minutes=10))).sign(req, ["client auth"], None)
    with pytest.raises(SigningError, match="refusing to sign a certificate that expired in the past"):
        signer(ca=ca_pem(NOW - dt.timedelta(minutes=1))).sign(req, ["client auth"], None)


@pytest.mark.parametrize("expiration,want", [
    (None, 3600.0), (0, 600.0), (599, 600.0), (601, 601.0), (1800, 1800.0), (3600, 3600.0), (7200, 3600.0)])
def test_duration_from_expiration_seconds(expiration: int | None, want: float) -> None:
    assert signer().duration(expiration) == want


def test_unrecognized_usages() -> None:
    with pytest.raises(SigningError) as err:
        key_usages_from_strings(["client auth", "fly", "swim"])
    assert str(err.value) == 'unrecognized usage values: ["fly" "swim"]'


def test_an_unknown_signer_name_is_refused() -> None:
    with pytest.raises(ValueError, match='unrecognized signerName: "example.com/x"'):
        signer(signer_name="example.com/x")


# Upstream TestHandle: (signer, builder, approved, failed condition message or None, signed)
HANDLE_CASES: list[tuple[str, CSRBuilder, bool, str | None, bool]] = [
    (KUBELET_CLIENT, CSRBuilder(), True, None, True),
    (KUBELET_CLIENT, CSRBuilder(), False, None, False),                     # not approved: untouched
    (KUBELET_CLIENT, CSRBuilder(usages=["client auth", "digital signature"]), True, None, True),
    (KUBELET_CLIENT, CSRBuilder(usages=["server auth"]), True,
     "usages did not match [client auth digital signature key encipherment]", False),
    (KUBELET_CLIENT, CSRBuilder(orgs=["not-system:nodes"]), True, "subject organization is not system:nodes", False),
    (KUBELET_CLIENT, CSRBuilder(dns=["example.com"]), True, "DNS subjectAltNames are not allowed", False),
    ("kubernetes.io/kube-apiserver-client", CSRBuilder(signer_name="kubernetes.io/kube-apiserver-client",
                                                       usages=["client auth"]), True, None, True),
    ("kubernetes.io/kube-apiserver-client", CSRBuilder(signer_name="kubernetes.io/kube-apiserver-client",
                                                       usages=["server auth", "client auth"]), True,
     "invalid usage for client certificate: server auth", False),
    ("kubernetes.io/kube-apiserver-client", CSRBuilder(signer_name="kubernetes.io/kube-apiserver-client",
                                                       usages=["digital signature"]), True,
     "missing required usage for client certificate: client auth", False),
    ("kubernetes.io/kubelet-serving", CSRBuilder(signer_name="kubernetes.io/kubelet-serving", dns=["node"],
                                                 usages=["digital signature", "server auth"]), True, None, True),
    ("kubernetes.io/kubelet-serving", CSRBuilder(signer_name="kubernetes.io/kubelet-serving",
                                                 usages=["digital signature", "server auth"]), True,
     "DNS or IP subjectAltName is required", False),
    ("kubernetes.io/legacy-unknown", CSRBuilder(), True, None, False),      # another signer's CSR
]


@pytest.mark.parametrize("signer_name,b,is_approved,failure,signed", HANDLE_CASES)
async def test_handle(signer_name: str, b: CSRBuilder, is_approved: bool, failure: str | None, signed: bool) -> None:
    cs = await FakeClientset.new()
    csr = await seed(cs, make_csr(b, conditions=approved() if is_approved else None))
    await signer(cs, signer_name).handle(csr)
    got = await cs.certificates_v1().certificatesigningrequests().get("test-csr")
    conditions = [(c.type, c.reason, c.message) for c in got.status.conditions or []] if got.status else []
    if failure is not None:
        assert conditions[-1] == ("Failed", "SignerValidationFailure", failure)
        assert cs.verbs() == [("update", "certificatesigningrequests", "status")]
    assert bool(got.status and got.status.certificate) is signed
    if not signed and failure is None:
        assert cs.verbs() == []
    if signed:
        cert = x509.load_pem_x509_certificate(base64.b64decode(got.status.certificate))
        assert cert.subject.rfc4514_string() == helpers.parse_csr(request_pem(b)).subject.rfc4514_string()


async def test_a_failed_csr_is_not_signed() -> None:
    cs = await FakeClientset.new()
    csr = await seed(cs, make_csr(CSRBuilder(), conditions=[*approved(), {"type": "Failed", "status": "True",
                                                                           "reason": "x"}]))
    await signer(cs).handle(csr)
    assert cs.verbs() == []


async def test_the_signing_controllers_sign_an_approved_csr() -> None:
    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(cs, clock=clock)
    controllers = new_csr_signing_controllers(cs, factory.certificates_v1().certificatesigningrequests(),
                                              load_ca(ca_pem(), key_pem()), clock=clock)
    assert [c.name for c in controllers] == ["csrsigning-kubelet-serving", "csrsigning-kubelet-client",
                                             "csrsigning-kube-apiserver-client", "csrsigning-legacy-unknown"]
    tasks = [asyncio.create_task(c.run()) for c in controllers]
    factory.start()
    try:
        await seed(cs, make_csr(CSRBuilder(), conditions=approved()))
        for _ in range(500):
            got = await cs.certificates_v1().certificatesigningrequests().get("test-csr")
            if got.status.certificate:
                break
            await asyncio.sleep(0.01)
        assert got.status.certificate
        updates = [a for a in cs.actions if a.verb == "update"]
        assert [(a.resource, a.subresource) for a in updates] == [("certificatesigningrequests", "status")]
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await factory.shutdown()
