"""LimitRanges. Upstream: pkg/registry/core/limitrange (strategy.go: no status, no generation)."""
from __future__ import annotations

from ....api.defaulting import core as defaulting
from ....api.validation import core as validation
from ...tables import core_storage as tables
from ..definition import ResourceDefinition
from ..registry import register

LIMIT_RANGES = register(ResourceDefinition(
    "", "v1", "LimitRange", "limitranges", "limitrange", True, "io.k8s.api.core.v1.LimitRange",
    short_names=("limits",),
    defaulter=defaulting.set_defaults_limit_range,
    validate=validation.validate_limit_range, validate_update=validation.validate_limit_range_update,
    columns=tables.limit_range_columns, printer=tables.print_limit_range,
))
