"""Kubelet TLS bootstrapping against the fake clientset: the CSR a node makes (upstream's name,
subject, signer, usages), waiting until approved and issued, denial and failure, and keeping
the pair in the cert dir."""
from __future__ import annotations

import asyncio
import base64
import datetime as dt
import pathlib
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubeplane.api.types import certificates_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.controller.certificates.approver import new_csr_approving_controller
from kubeplane.controller.certificates.signer import load_ca, new_csr_signing_controllers
from kubeplane.kubelet.certificate import bootstrap
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.pki import ensure_pki


def test_digested_name_is_upstreams() -> None:
    """The name depends on the key, the subject and the usages, each base64url-encoded and
    '|'-terminated before SHA-512/256 (so 'CN:foo,O:bar' and 'CN:foob,O:ar' differ)."""
    key = ec.generate_private_key(ec.SECP256R1())
    pub = key.public_key()
    name = bootstrap.digested_name(pub, "system:node:a", ["system:nodes"], bootstrap.USAGES)
    h = hashes.Hash(hashes.SHA512_256())
    der = pub.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    for part in (der, b"system:node:a", b"system:nodes", b"digital signature", b"client auth"):
        h.update(base64.urlsafe_b64encode(part).rstrip(b"=") + b"|")
    assert name == "node-csr-" + base64.urlsafe_b64encode(h.finalize()).rstrip(b"=").decode()
    assert len(name) == len("node-csr-") + 43
    assert bootstrap.digested_name(pub, "foo", ["bar"], []) != bootstrap.digested_name(pub, "foob", ["ar"], [])


async def approve(cs: Any, name: str, condition: str = "Approved") -> None:
    csrs = cs.certificates_v1().certificatesigningrequests()
    csr = await csrs.get(name)
    csr.status = certificates_v1.CertificateSigningRequestStatus(conditions=[
        certificates_v1.CertificateSigningRequestCondition(type=condition, status="True", reason="Test",
                                                           message="by the test")])
    await csrs.update_approval(csr)


async def pending_csr(cs: Any) -> Any:
    for _ in range(500):
        items = (await cs.certificates_v1().certificatesigningrequests().list()).items
        if items:
            return items[0]
        await asyncio.sleep(0.01)
    raise AssertionError("no CSR was made")


async def test_the_request_names_the_node_and_waits_for_the_certificate() -> None:
    cs = await FakeClientset.new()
    task = asyncio.create_task(bootstrap.request_node_certificate(cs, "n1"))
    csr = await pending_csr(cs)
    assert csr.metadata.name.startswith("node-csr-")
    assert csr.spec.signer_name == "kubernetes.io/kube-apiserver-client-kubelet"
    assert csr.spec.usages == ["digital signature", "client auth"]
    req = x509.load_pem_x509_csr(base64.b64decode(csr.spec.request))
    assert req.subject.rfc4514_string() == "CN=system:node:n1,O=system:nodes"
    assert isinstance(req.public_key(), ec.EllipticCurvePublicKey)
    await approve(cs, csr.metadata.name)
    await asyncio.sleep(0.05)
    assert not task.done()                       # approved but not issued yet
    csrs = cs.certificates_v1().certificatesigningrequests()
    got = await csrs.get(csr.metadata.name)
    got.status.certificate = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nissued\n-----END CERTIFICATE-----\n").decode()
    await csrs.update_status(got)
    cert, key = await asyncio.wait_for(task, 5)
    assert cert.startswith(b"-----BEGIN CERTIFICATE-----\nissued")
    assert serialization.load_pem_private_key(key, None).public_key() == req.public_key()


@pytest.mark.parametrize("condition,message", [
    ("Denied", "certificate signing request is denied, reason: Test, message: by the test"),
    ("Failed", "certificate signing request failed, reason: Test, message: by the test")])
async def test_a_denied_or_failed_request_is_an_error(condition: str, message: str) -> None:
    cs = await FakeClientset.new()
    task = asyncio.create_task(bootstrap.request_node_certificate(cs, "n1"))
    csr = await pending_csr(cs)
    if condition == "Denied":
        await approve(cs, csr.metadata.name, "Denied")
    else:
        csrs = cs.certificates_v1().certificatesigningrequests()
        csr.status = certificates_v1.CertificateSigningRequestStatus(conditions=[
            certificates_v1.CertificateSigningRequestCondition(type="Failed", status="True", reason="Test",
                                                               message="by the test")])
        await csrs.update_status(csr)
    with pytest.raises(bootstrap.BootstrapError) as err:
        await asyncio.wait_for(task, 5)
    assert str(err.value) == message


async def test_an_existing_csr_of_the_same_request_is_reused_and_another_refused() -> None:
    cs = await FakeClientset.new()
    key = ec.generate_private_key(ec.SECP256R1())
    pem = bootstrap.make_csr(key, "system:node:n1", ["system:nodes"])
    first = await bootstrap.request_certificate(cs, pem, "node-csr-x", bootstrap.SIGNER, bootstrap.USAGES)
    assert await bootstrap.request_certificate(cs, pem, "node-csr-x", bootstrap.SIGNER, bootstrap.USAGES) == first
    other = bootstrap.make_csr(ec.generate_private_key(ec.SECP256R1()), "system:node:n1", ["system:nodes"])
    with pytest.raises(bootstrap.BootstrapError, match="retrieved csr is not compatible: node-csr-x"):
        await bootstrap.request_certificate(cs, other, "node-csr-x", bootstrap.SIGNER, bootstrap.USAGES)


async def test_with_the_controllers_the_pair_is_issued_kept_and_reused(tmp_path: pathlib.Path) -> None:
    pki = ensure_pki(tmp_path / "data", [])
    ca_pem = pki.ca_cert.read_bytes()
    cs = await FakeClientset.new()
    factory = SharedInformerFactory(cs)
    csrs = factory.certificates_v1().certificatesigningrequests()
    controllers = [new_csr_approving_controller(cs, csrs),
                   *new_csr_signing_controllers(cs, csrs, load_ca(ca_pem, (tmp_path / "data/pki/ca.key").read_bytes()))]
    tasks = [asyncio.create_task(c.run()) for c in controllers]
    factory.start()
    try:
        cert_dir = tmp_path / "certs" / "n1"
        cert, key = await asyncio.wait_for(bootstrap.load_or_request_client_cert(cs, "n1", cert_dir, ca_pem), 10)
        issued = x509.load_pem_x509_certificate(cert)
        assert issued.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:n1"
        issued.verify_directly_issued_by(x509.load_pem_x509_certificate(ca_pem))
        kept = cert_dir / "kubelet-client-current.pem"
        assert kept.read_bytes() == cert + key and oct(kept.stat().st_mode & 0o777) == "0o600"
        cs.clear_actions()
        assert await bootstrap.load_or_request_client_cert(cs, "n1", cert_dir, ca_pem) == (cert, key)
        assert cs.actions == []                                        # reused: no new CSR
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await factory.shutdown()
    assert bootstrap.load_client_cert(kept, "n2", ca_pem) is None                    # another node's
    other_ca = ensure_pki(tmp_path / "other", []).ca_cert.read_bytes()
    assert bootstrap.load_client_cert(kept, "n1", other_ca) is None                  # another cluster's
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=400)

    class Later:
        def now(self) -> float:
            return later.timestamp()
    assert bootstrap.load_client_cert(kept, "n1", ca_pem, clock=Later()) is None   # expired (a year)
    kept.write_bytes(b"junk")
    assert bootstrap.load_client_cert(kept, "n1", ca_pem) is None
