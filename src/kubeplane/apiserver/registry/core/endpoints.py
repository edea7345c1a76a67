"""Endpoints. Upstream: pkg/registry/core/endpoint (strategy.go). Stored under
/registry/endpoints/, where the Service allocator writes default/kubernetes."""
from __future__ import annotations

from ....api.defaulting import core as defaulting
from ....api.validation import core as validation
from ...tables import core_storage as tables
from ..definition import ResourceDefinition
from ..registry import register

ENDPOINTS = register(ResourceDefinition(
    "", "v1", "Endpoints", "endpoints", "endpoints", True, "io.k8s.api.core.v1.Endpoints",
    short_names=("ep",), storage_prefix="endpoints",
    defaulter=defaulting.set_defaults_endpoints, defaults_outside_spec=True,
    validate=validation.validate_endpoints, validate_update=validation.validate_endpoints_update,
    columns=tables.endpoints_columns, printer=tables.print_endpoints,
    deprecation_warning="v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice",
))
