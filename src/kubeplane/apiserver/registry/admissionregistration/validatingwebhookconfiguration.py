"""ValidatingWebhookConfigurations (strategy: webhookconfiguration.py)."""
from __future__ import annotations

from ....api.defaulting import admissionregistration as defaulting
from ...tables import admissionregistration as tables
from ..definition import ResourceDefinition
from ..registry import register
from .webhookconfiguration import GROUP, WebhookConfigurationStrategy, validate_configuration

VALIDATING_WEBHOOK_CONFIGURATIONS = register(ResourceDefinition(
    GROUP, "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations",
    "validatingwebhookconfiguration", False, "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
    categories=("api-extensions",),
    strategy=WebhookConfigurationStrategy(),
    defaulter=defaulting.set_defaults_validating_webhook_configuration, defaults_outside_spec=True,
    validate=validate_configuration(False)[0],
    validate_update=validate_configuration(False)[1],
    columns=tables.webhook_columns, printer=tables.print_webhook_configuration,
))
