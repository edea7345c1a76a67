"""Ingresses. Upstream: pkg/registry/networking/ingress (strategy.go: status reset on create
and update, generation follows spec changes)."""
from __future__ import annotations

from ....api.resources import STATUS
from ....api.validation import networking as validation
from ...tables import networking as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Strategy


class IngressStrategy(Strategy):
    has_status = True
    sets_generation = True


INGRESSES = register(ResourceDefinition(
    "networking.k8s.io", "v1", "Ingress", "ingresses", "ingress", True, "io.k8s.api.networking.v1.Ingress",
    short_names=("ing",), subresources=(STATUS("Ingress"),),
    strategy=IngressStrategy(),
    validate=validation.validate_ingress, validate_update=validation.validate_ingress_update,
    columns=tables.ingress_columns, printer=tables.print_ingress,
))
