"""ConfigMaps. Upstream: pkg/registry/core/configmap (strategy.go)."""
from __future__ import annotations

from ....api.validation import core as validation
from ...tables import columns, printers
from ..definition import ResourceDefinition
from ..registry import register

CONFIGMAPS = register(ResourceDefinition(
    "", "v1", "ConfigMap", "configmaps", "configmap", True, "io.k8s.api.core.v1.ConfigMap",
    short_names=("cm",),
    validate=validation.validate_config_map, validate_update=validation.validate_config_map_update,
    columns=columns.config_map_columns, printer=printers.print_config_map,
))
