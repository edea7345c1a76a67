"""PodCertificateRequests (spec immutable, status through /status).
Upstream: pkg/registry/certificates/podcertificaterequest/strategy.go."""
from __future__ import annotations

from ....api import labels
from ....api.resources import STATUS
from ....api.validation import certificates as validation
from ...tables import certificates as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Strategy


class PCRStrategy(Strategy):
    has_status = True


POD_CERTIFICATE_REQUESTS = register(ResourceDefinition(
    "certificates.k8s.io", "v1", "PodCertificateRequest", "podcertificaterequests", "podcertificaterequest", True,
    "io.k8s.api.certificates.v1.PodCertificateRequest",
    subresources=(STATUS("PodCertificateRequest"),),
    strategy=PCRStrategy(),
    validate=validation.validate_pod_certificate_request,
    validate_update=validation.validate_pod_certificate_request_update,
    columns=tables.pcr_columns, printer=tables.print_pcr,
    field_selectors={**labels.META_FIELDS, "spec.signerName": labels.path("spec", "signerName"),
                     "spec.podName": labels.path("spec", "podName"), "spec.nodeName": labels.path("spec", "nodeName")},
))
