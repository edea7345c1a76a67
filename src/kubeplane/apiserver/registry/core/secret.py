"""Secrets. Upstream: pkg/registry/core/secret (strategy.go)."""
from __future__ import annotations

from ....api import conversion, defaults, labels
from ....api.validation import core as validation
from ...tables import columns, printers
from ..definition import ResourceDefinition
from ..registry import register

SECRETS = register(ResourceDefinition(
    "", "v1", "Secret", "secrets", "secret", True, "io.k8s.api.core.v1.Secret",
    defaulter=defaults.set_defaults_secret, defaults_outside_spec=True,
    validate=validation.validate_secret, validate_update=validation.validate_secret_update,
    columns=columns.secret_columns, printer=printers.print_secret,
    field_selectors={**labels.META_FIELDS, "type": labels.path("type")},
    to_storage=conversion.secret_v1_to_core,      # stringData merged into data, never stored
))
