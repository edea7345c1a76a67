"""ServiceCIDRs. Upstream: pkg/registry/networking/servicecidr (strategy.go: status reset on
create and update; spec.cidrs immutable)."""
from __future__ import annotations

from ....api.resources import STATUS
from ....api.validation import networking as validation
from ...tables import networking as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Strategy


class ServiceCIDRStrategy(Strategy):
    has_status = True


SERVICE_CIDRS = register(ResourceDefinition(
    "networking.k8s.io", "v1", "ServiceCIDR", "servicecidrs", "servicecidr", False,
    "io.k8s.api.networking.v1.ServiceCIDR",
    subresources=(STATUS("ServiceCIDR"),),
    strategy=ServiceCIDRStrategy(),
    validate=validation.validate_service_cidr, validate_update=validation.validate_service_cidr_update,
    columns=tables.service_cidr_columns, printer=tables.print_service_cidr,
))
