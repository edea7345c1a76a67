"""ClusterTrustBundles. Upstream: pkg/registry/certificates/clustertrustbundle/strategy.go."""
from __future__ import annotations

from ....api import labels
from ....api.validation import certificates as validation
from ...tables import certificates as tables
from ..definition import ResourceDefinition
from ..registry import register

CLUSTER_TRUST_BUNDLES = register(ResourceDefinition(
    "certificates.k8s.io", "v1", "ClusterTrustBundle", "clustertrustbundles", "clustertrustbundle", False,
    "io.k8s.api.certificates.v1.ClusterTrustBundle",
    validate=validation.validate_cluster_trust_bundle,
    validate_update=validation.validate_cluster_trust_bundle_update,
    columns=tables.ctb_columns, printer=tables.print_ctb,
    field_selectors={**labels.NAME_FIELD, "spec.signerName": labels.path("spec", "signerName")},
))
