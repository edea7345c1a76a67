"""Leases. Upstream: pkg/registry/coordination/lease (strategy.go)."""
from __future__ import annotations

from ....api.validation import coordination as validation
from ...tables import columns, printers
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import CreateOnUpdateStrategy

LEASES = register(ResourceDefinition(
    "coordination.k8s.io", "v1", "Lease", "leases", "lease", True, "io.k8s.api.coordination.v1.Lease",
    strategy=CreateOnUpdateStrategy(),
    validate=validation.validate_lease, validate_update=validation.validate_lease_update,
    columns=columns.lease_columns, printer=printers.print_lease,
))
