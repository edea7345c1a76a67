"""IPAddresses (named by the address itself). Upstream: pkg/registry/networking/ipaddress
(strategy.go: no status; spec.parentRef immutable)."""
from __future__ import annotations

from ....api.validation import networking as validation
from ...tables import networking as tables
from ..definition import ResourceDefinition
from ..registry import register

IP_ADDRESSES = register(ResourceDefinition(
    "networking.k8s.io", "v1", "IPAddress", "ipaddresses", "ipaddress", False, "io.k8s.api.networking.v1.IPAddress",
    short_names=("ip",),
    validate=validation.validate_ip_address, validate_update=validation.validate_ip_address_update,
    columns=tables.ip_address_columns, printer=tables.print_ip_address,
))
