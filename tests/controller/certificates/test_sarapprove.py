"""csrapproving: upstream's TestHandle and TestRecognizers (approver/sarapprove_test.go), the
SubjectAccessReview it sends, and the kubelet-client CSR helpers' messages."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import pytest

from kubeplane.api import types
from kubeplane.controller.certificates import helpers
from kubeplane.controller.certificates.approver.sarapprove import (
    CSRRecognizer, SARApprover, is_node_client_cert, is_self_node_client_cert,
)
from kubeplane.controller.certificates.certificate_controller import IgnorableError
from kubeplane.testing.fake import FakeClientset

from .csrs import CSRBuilder, approved, make_csr, request_pem


@pytest.mark.parametrize("recognized,allowed", [(False, False), (False, True), (True, False), (True, True)])
async def test_handle(recognized: bool, allowed: bool) -> None:
    cs = await FakeClientset.new()
    csr, = await cs.seed(make_csr(CSRBuilder(cn="test-cert")))
    approver = SARApprover(cs)
    reviews: list[str] = []

    async def authorize(csr: Any, subresource: str) -> bool:
        reviews.append(subresource)
        return allowed
    approver.authorize = authorize
    approver.recognizers = [CSRRecognizer(lambda csr, x509cr: recognized, "baz", "tester")]
    if recognized and not allowed:
        with pytest.raises(IgnorableError, match=r'recognized csr "test-csr" as \[baz\] but subject access review '
                                                 r'was not approved'):
            await approver.handle(csr)
    else:
        await approver.handle(csr)
    assert reviews == (["baz"] if recognized else [])
    if recognized and allowed:
        assert cs.verbs() == [("update", "certificatesigningrequests", "approval")]
        got = await cs.certificates_v1().certificatesigningrequests().get("test-csr")
        assert [(c.type, c.status, c.reason, c.message) for c in got.status.conditions] == [
            ("Approved", "True", "AutoApproved", "tester")]
    else:
        assert cs.verbs() == []


async def test_the_review_asks_about_the_requester_stored_by_the_server() -> None:
    cs = await FakeClientset.new()       # AlwaysAllow: every review allows
    csr, = await cs.seed(make_csr(CSRBuilder()))       # the server replaces the requester with the fake's user
    await SARApprover(cs).handle(csr)
    sar = [a for a in cs.actions if a.resource == "subjectaccessreviews"]
    assert len(sar) == 1
    spec = sar[0].body["spec"]
    assert spec["resourceAttributes"] == {"group": "certificates.k8s.io", "resource": "certificatesigningrequests",
                                          "verb": "create", "subresource": "nodeclient"}
    assert spec["user"] == csr.spec.username == "system:kube-controller-manager"
    assert spec["groups"] == csr.spec.groups
    got = await cs.certificates_v1().certificatesigningrequests().get("test-csr")
    assert got.status.conditions[0].message == "Auto approving kubelet client certificate after SubjectAccessReview."


async def test_approved_denied_or_issued_csrs_are_left_alone() -> None:
    cs = await FakeClientset.new()
    approver = SARApprover(cs)
    for conditions in (approved(), [{"type": "Denied", "status": "True", "reason": "no"}]):
        await approver.handle(make_csr(CSRBuilder(), conditions=conditions))
    assert cs.actions == []


async def test_an_unparsable_request_is_an_error() -> None:
    csr = make_csr(CSRBuilder())
    csr.spec.request = types.to_dict(csr)["spec"]["request"][:40]
    with pytest.raises(ValueError, match='unable to parse csr "test-csr"'):
        await SARApprover(await FakeClientset.new()).handle(csr)


Mutation = Callable[[CSRBuilder], CSRBuilder]
GOOD: list[Mutation] = [lambda b: b, lambda b: replace(b, usages=["digital signature", "client auth"])]
BAD: list[Mutation] = [
    lambda b: replace(b, cn="mike"),
    lambda b: replace(b, orgs=[]),
    lambda b: replace(b, orgs=["system:master"]),
    lambda b: replace(b, usages=[*b.usages, "server auth"]),
    lambda b: replace(b, signer_name="example.com/not-correct"),
    lambda b: replace(b, signer_name="kubernetes.io/kubelet-serving"),
    lambda b: replace(b, dns=["foo.example.com"]),
    lambda b: replace(b, ips=["127.0.0.1"]),
    lambda b: replace(b, emails=["a@b.c"]),
]
DIFFERENT_CN: list[Mutation] = [lambda b: replace(b, requestor="joe"), lambda b: replace(b, cn="system:node:bar")]


@pytest.mark.parametrize("cases,node_client,self_node_client",
                         [(GOOD, True, True), (BAD, False, False), (DIFFERENT_CN, True, False)])
def test_recognizers(cases: list[Mutation], node_client: bool, self_node_client: bool) -> None:
    for mutate in cases:
        b = mutate(CSRBuilder())
        csr = make_csr(b)
        x509cr = helpers.parse_csr(helpers.request_bytes(csr))
        assert is_node_client_cert(csr, x509cr) is node_client, b
        assert is_self_node_client_cert(csr, x509cr) is self_node_client, b


@pytest.mark.parametrize("b,message", [
    (CSRBuilder(orgs=["system:nodes", "x"]), "subject organization is not system:nodes"),
    (CSRBuilder(dns=["a"]), "DNS subjectAltNames are not allowed"),
    (CSRBuilder(emails=["a@b.c"]), "Email subjectAltNames are not allowed"),
    (CSRBuilder(ips=["::1"]), "IP subjectAltNames are not allowed"),
    (CSRBuilder(cn="node:foo"), "subject common name does not begin with system:node:"),
    (CSRBuilder(usages=["client auth"]), "usages did not match [client auth digital signature key encipherment]"),
])
def test_validate_kubelet_client_csr_messages(b: CSRBuilder, message: str) -> None:
    with pytest.raises(helpers.CSRError) as err:
        helpers.validate_kubelet_client_csr(helpers.parse_csr(request_pem(b)), set(b.usages))
    assert str(err.value) == message


def test_parse_csr_wants_a_certificate_request_block() -> None:
    with pytest.raises(helpers.CSRError, match="PEM block type must be CERTIFICATE REQUEST"):
        helpers.parse_csr(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    with pytest.raises(helpers.CSRError, match="PEM block type must be CERTIFICATE REQUEST"):
        helpers.parse_csr(b"junk")
