"""CertificateApproval, CertificateSigning and CertificateSubjectRestriction: upstream's
admission_test.go cases (plugin/pkg/admission/certificates/*): the approve/sign verb on the
signerName or its domain wildcard, only a changed certificate checked, system:masters refused
for kube-apiserver-client."""
from __future__ import annotations

import base64
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubeplane.api import errors
from kubeplane.apiserver.admission.interface import Attributes, Operation
from kubeplane.apiserver.admission.plugins.certificates import (
    CertificateApproval, CertificateSigning, CertificateSubjectRestriction,
)
from kubeplane.apiserver.authentication.user import UserInfo
from kubeplane.apiserver.authorization.authorizer import Decision
from kubeplane.apiserver.server import APIServer

USER = UserInfo("jane", groups=("system:authenticated",))


class Allowing:
    """An authorizer allowing (verb, signers name) pairs and recording what it was asked."""

    def __init__(self, *allowed: tuple[str, str]) -> None:
        self.allowed, self.asked = set(allowed), []

    def authorize(self, a: Any) -> tuple[Decision, str]:
        assert (a.api_group, a.api_version, a.resource, a.resource_request) == ("certificates.k8s.io", "*", "signers",
                                                                               True)
        self.asked.append((a.verb, a.name))
        return (Decision.ALLOW if (a.verb, a.name) in self.allowed else Decision.NO_OPINION), ""


def csr(signer: str = "example.com/signer", certificate: str = "", orgs: tuple[str, ...] = ()) -> dict[str, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    req = (x509.CertificateSigningRequestBuilder().subject_name(x509.Name(
        [*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs), x509.NameAttribute(NameOID.COMMON_NAME, "x")]))
        .sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))
    obj: dict[str, Any] = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                           "metadata": {"name": "c"}, "spec": {"signerName": signer,
                                                                "request": base64.b64encode(req).decode()}}
    if certificate:
        obj["status"] = {"certificate": certificate}
    return obj


def attrs(op: Operation, subresource: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> Attributes:
    return Attributes(op, "certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest", "",
                      "c", obj, old, subresource, user=USER)


@pytest.mark.parametrize("allowed,ok", [
    ((("approve", "example.com/signer"),), True),
    ((("approve", "example.com/*"),), True),
    ((("approve", "other.com/*"),), False),
    ((("sign", "example.com/signer"),), False),
    ((), False),
])
async def test_approval_needs_approve_on_the_signer(server: APIServer, allowed: tuple[tuple[str, str], ...],
                                                    ok: bool) -> None:
    server.authorizer = Allowing(*allowed)
    a = attrs(Operation.UPDATE, "approval", csr(), csr("old.com/signer"))
    if ok:
        await CertificateApproval(server).validate(a)
        return
    with pytest.raises(errors.StatusError) as e:
        await CertificateApproval(server).validate(a)
    assert (e.value.code, e.value.message) == (403, 'certificatesigningrequests.certificates.k8s.io "c" is forbidden: '
                                                    'user not permitted to approve requests with signerName '
                                                    '"example.com/signer"')


async def test_approval_ignores_other_subresources(server: APIServer) -> None:
    server.authorizer = authz = Allowing()
    await CertificateApproval(server).validate(attrs(Operation.UPDATE, "status", csr()))
    assert authz.asked == []


@pytest.mark.parametrize("old_cert,new_cert,allowed,ok", [
    ("", "", (), True),                                      # no certificate change: not checked
    ("Y2VydA==", "Y2VydA==", (), True),
    ("", "Y2VydA==", (("sign", "example.com/signer"),), True),
    ("", "Y2VydA==", (("sign", "example.com/*"),), True),
    ("", "Y2VydA==", (("approve", "example.com/signer"),), False),
    ("Y2VydA==", "", (), False),                             # removing it is a change too
])
async def test_signing_needs_sign_on_the_signer(server: APIServer, old_cert: str, new_cert: str,
                                                allowed: tuple[tuple[str, str], ...], ok: bool) -> None:
    server.authorizer = Allowing(*allowed)
    a = attrs(Operation.UPDATE, "status", csr(certificate=new_cert), csr(certificate=old_cert))
    if ok:
        await CertificateSigning(server).validate(a)
        return
    with pytest.raises(errors.StatusError) as e:
        await CertificateSigning(server).validate(a)
    assert e.value.message.endswith('user not permitted to sign requests with signerName "example.com/signer"')


@pytest.mark.parametrize("signer,orgs,ok", [
    ("kubernetes.io/kube-apiserver-client", ("system:masters",), False),
    ("kubernetes.io/kube-apiserver-client", ("devs", "system:masters"), False),
    ("kubernetes.io/kube-apiserver-client", ("devs",), True),
    ("kubernetes.io/kube-apiserver-client-kubelet", ("system:masters",), True),     # another signer's rules
    ("example.com/signer", ("system:masters",), True),
])
async def test_subject_restriction(server: APIServer, signer: str, orgs: tuple[str, ...], ok: bool) -> None:
    a = attrs(Operation.CREATE, "", csr(signer, orgs=orgs))
    if ok:
        await CertificateSubjectRestriction(server).validate(a)
        return
    with pytest.raises(errors.StatusError) as e:
        await CertificateSubjectRestriction(server).validate(a)
    assert e.value.message == ('certificatesigningrequests.certificates.k8s.io "c" is forbidden: use of '
                               'kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed')


async def test_through_the_api_a_system_masters_request_is_refused(server: APIServer) -> None:
    from kubeplane.apiserver.inprocess import InProcessTransport
    from kubeplane.client.clientset import Clientset
    cs = Clientset(InProcessTransport(server))
    body = csr("kubernetes.io/kube-apiserver-client", orgs=("system:masters",))
    body["spec"]["usages"] = ["client auth"]
    with pytest.raises(errors.Forbidden):
        await cs.certificates_v1().certificatesigningrequests().create(body)
    body["spec"]["request"] = csr(orgs=("devs",))["spec"]["request"]
    await cs.certificates_v1().certificatesigningrequests().create(body)
