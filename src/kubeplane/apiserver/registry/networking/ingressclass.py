"""IngressClasses. Upstream: pkg/registry/networking/ingressclass (strategy.go: generation
follows spec changes; no status)."""
from __future__ import annotations

from ....api.defaulting import networking as defaulting
from ....api.validation import networking as validation
from ...tables import networking as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Strategy


class IngressClassStrategy(Strategy):
    sets_generation = True


INGRESS_CLASSES = register(ResourceDefinition(
    "networking.k8s.io", "v1", "IngressClass", "ingressclasses", "ingressclass", False,
    "io.k8s.api.networking.v1.IngressClass",
    strategy=IngressClassStrategy(),
    defaulter=defaulting.set_defaults_ingress_class,
    validate=validation.validate_ingress_class, validate_update=validation.validate_ingress_class_update,
    columns=tables.ingress_class_columns, printer=tables.print_ingress_class,
))
