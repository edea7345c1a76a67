"""csrapproving: approves a kubelet's client certificate request when a SubjectAccessReview
says its requester may create certificatesigningrequests/selfnodeclient (a node renewing its
own certificate) or /nodeclient (a bootstrap credential asking for any node's); anything else
is left for a person (`kubectl certificate approve`).

kubeadm binds system:certificates.k8s.io:certificatesigningrequests:nodeclient to its
bootstrap tokens' group and ...:selfnodeclient to system:nodes; cluster-admin has both.

Upstream: pkg/controller/certificates/approver/sarapprove.go.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from cryptography import x509

from ....api.types import certificates_v1
from ....client.clientset import Clientset
from ....client.informers import ResourceInformer
from ....client.listers import CertificateSigningRequestLister
from ....utils.clock import REAL_CLOCK, Clock
from .. import helpers
from ..certificate_controller import CertificateController, IgnorableError, get_cert_approval_condition

CSR = certificates_v1.CertificateSigningRequest


@dataclass(frozen=True)
class CSRRecognizer:
    recognize: Callable[[CSR, x509.CertificateSigningRequest], bool]
    subresource: str                 # of certificates.k8s.io certificatesigningrequests, verb create
    success_message: str


def is_node_client_cert(csr: CSR, x509cr: x509.CertificateSigningRequest) -> bool:
    """Upstream: isNodeClientCert"""
    spec = csr.spec
    if spec is None or spec.signer_name != helpers.KUBE_APISERVER_CLIENT_KUBELET_SIGNER:
        return False
    return helpers.is_kubelet_client_csr(x509cr, set(spec.usages or ()))


def is_self_node_client_cert(csr: CSR, x509cr: x509.CertificateSigningRequest) -> bool:
    """Upstream: isSelfNodeClientCert — the requester is the node the certificate names."""
    if (csr.spec.username if csr.spec else None) != helpers.common_name(x509cr):
        return False
    return is_node_client_cert(csr, x509cr)


def recognizers() -> list[CSRRecognizer]:
    return [
        CSRRecognizer(is_self_node_client_cert, "selfnodeclient",
                      "Auto approving self kubelet client certificate after SubjectAccessReview."),
        CSRRecognizer(is_node_client_cert, "nodeclient",
                      "Auto approving kubelet client certificate after SubjectAccessReview."),
    ]


class SARApprover:
    def __init__(self, client: Clientset) -> None:
        self.client = client
        self.recognizers = recognizers()
        # test seam: (csr, subresource) -> allowed
        self.authorize: Callable[[CSR, str], Awaitable[bool]] = self._authorize

    async def handle(self, csr: CSR) -> None:
        """Upstream: sarApprover.handle"""
        if csr.status is not None and csr.status.certificate:
            return
        approved, denied = get_cert_approval_condition(csr)
        if approved or denied:
            return
        try:
            x509cr = helpers.parse_csr(helpers.request_bytes(csr))
        except helpers.CSRError as err:
            raise ValueError(f'unable to parse csr "{csr.metadata.name}": {err}') from None
        tried: list[str] = []
        for r in self.recognizers:
            if not r.recognize(csr, x509cr):
                continue
            tried.append(r.subresource)
            if await self.authorize(csr, r.subresource):
                append_approval_condition(csr, r.success_message)
                try:
                    await self.client.certificates_v1().certificatesigningrequests().update_approval(csr)
                except Exception as err:
                    raise RuntimeError(f"error updating approval for csr: {err}") from err
                return
        if tried:
            raise IgnorableError(f'recognized csr "{csr.metadata.name}" as [{" ".join(tried)}] but subject access '
                                 "review was not approved")

    async def _authorize(self, csr: CSR, subresource: str) -> bool:
        """A SubjectAccessReview for the CSR's requester. Upstream: sarApprover.authorize"""
        spec = csr.spec or certificates_v1.CertificateSigningRequestSpec()
        sar: dict[str, Any] = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
            "user": spec.username or "", "uid": spec.uid or "", "groups": list(spec.groups or []),
            "extra": dict(spec.extra or {}),
            "resourceAttributes": {"group": "certificates.k8s.io", "resource": "certificatesigningrequests",
                                   "verb": "create", "subresource": subresource}}}
        got = await self.client.authorization_v1().subjectaccessreviews().create(sar)
        return bool(got.status is not None and got.status.allowed)


def append_approval_condition(csr: CSR, message: str) -> None:
    """Upstream: appendApprovalCondition"""
    if csr.status is None:
        csr.status = certificates_v1.CertificateSigningRequestStatus()
    csr.status.conditions = [*(csr.status.conditions or []), certificates_v1.CertificateSigningRequestCondition(
        type="Approved", status="True", reason="AutoApproved", message=message)]


def new_csr_approving_controller(client: Clientset, csr_informer: ResourceInformer[CertificateSigningRequestLister],
                                 *, clock: Clock = REAL_CLOCK) -> CertificateController:
    """Upstream: NewCSRApprovingController"""
    approver = SARApprover(client)
    return CertificateController("csrapproving", client, csr_informer, approver.handle, clock=clock)
