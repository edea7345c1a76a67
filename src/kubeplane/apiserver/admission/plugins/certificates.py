"""The CertificateSigningRequest admission plugins, now that the controller-manager signs:

- CertificateApproval: approving or denying (certificatesigningrequests/approval) needs the
  `approve` verb on certificates.k8s.io `signers` named the CSR's signerName (or
  `<domain>/*`);
- CertificateSigning: setting or changing status.certificate (/status) needs `sign` on it;
- CertificateSubjectRestriction: a kubernetes.io/kube-apiserver-client CSR may not ask for the
  system:masters group (which no RBAC can take away).

Upstream: plugin/pkg/admission/certificates/{approval,signing,subjectrestriction}/admission.go
and certificates/util.go (IsAuthorizedForSignerName). Cost: only CSR writes reach them.
"""
from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING

from ...authentication.user import SYSTEM_PRIVILEGED_GROUP, UserInfo
from ...authorization.authorizer import Attributes as AuthzAttributes
from ...authorization.authorizer import Decision
from ..chain import register
from ..interface import Attributes, Operation, Plugin, forbidden

if TYPE_CHECKING:
    from ...server import APIServer

GROUP = "certificates.k8s.io"
CSRS = frozenset({(GROUP, "certificatesigningrequests")})
KUBE_APISERVER_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"


def is_authorized_for_signer_name(authz: object, user: UserInfo, verb: str, signer_name: str) -> bool:
    """The verb on signers/<signerName>, else on signers/<domain>/*. Upstream: IsAuthorizedForSignerName"""
    authorize = getattr(authz, "authorize", None)
    if authorize is None:
        return True
    for name in (signer_name, signer_name.split("/")[0] + "/*"):
        decision, _ = authorize(AuthzAttributes(user=user, verb=verb, resource_request=True, api_group=GROUP,
                                                api_version="*", resource="signers", name=name))
        if decision == Decision.ALLOW:
            return True
    return False


def _signer_name(obj: dict[str, object] | None) -> str:
    spec = (obj or {}).get("spec")
    name = spec.get("signerName") if isinstance(spec, dict) else ""
    return name if isinstance(name, str) else ""


@register
class CertificateApproval(Plugin):
    NAME = "CertificateApproval"
    OPERATIONS = frozenset({Operation.UPDATE})
    RESOURCES = CSRS
    SUBRESOURCES = frozenset({"approval"})
    VALIDATING = True

    async def validate(self, a: Attributes) -> None:
        """Checked against the new object, in case the signerName is changed with the approval."""
        if not a.targets(GROUP, "certificatesigningrequests", "approval"):
            return
        _require_signer_verb(self.api, a, "approve", a.obj)


@register
class CertificateSigning(Plugin):
    NAME = "CertificateSigning"
    OPERATIONS = frozenset({Operation.UPDATE})
    RESOURCES = CSRS
    SUBRESOURCES = frozenset({"status"})
    VALIDATING = True

    async def validate(self, a: Attributes) -> None:
        """Only a changed status.certificate is checked."""
        if not a.targets(GROUP, "certificatesigningrequests", "status"):
            return
        old = ((a.old_obj or {}).get("status") or {}).get("certificate")
        new = ((a.obj or {}).get("status") or {}).get("certificate")
        if old == new:
            return
        _require_signer_verb(self.api, a, "sign", a.old_obj)


def _require_signer_verb(api: APIServer, a: Attributes, verb: str, csr: dict[str, object] | None) -> None:
    """403 unless the user may `verb` the CSR's signerName. Upstream: the approval and signing
    plugins' IsAuthorizedForSignerName check and their messages."""
    signer = _signer_name(csr)
    if not is_authorized_for_signer_name(api.authorizer, a.user, verb, signer):
        raise forbidden(a, f'user not permitted to {verb} requests with signerName "{signer}"')


@register
class CertificateSubjectRestriction(Plugin):
    NAME = "CertificateSubjectRestriction"
    OPERATIONS = frozenset({Operation.CREATE})
    RESOURCES = CSRS
    SUBRESOURCES = frozenset({""})
    VALIDATING = True

    async def validate(self, a: Attributes) -> None:
        if not a.targets(GROUP, "certificatesigningrequests") or _signer_name(a.obj) != KUBE_APISERVER_CLIENT_SIGNER:
            return
        from cryptography import x509
        from cryptography.x509.oid import NameOID
        spec = (a.obj or {}).get("spec") or {}
        try:
            pem = base64.b64decode(spec.get("request") or "", validate=True)
            req = x509.load_pem_x509_csr(pem[pem.find(b"-----BEGIN"):])
        except (binascii.Error, ValueError, TypeError):
            raise forbidden(a, "failed to parse CSR") from None
        if any(o.value == SYSTEM_PRIVILEGED_GROUP for o in req.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)):
            raise forbidden(a, f"use of {KUBE_APISERVER_CLIENT_SIGNER} signer with {SYSTEM_PRIVILEGED_GROUP} group "
                               "is not allowed")
