"""ValidatingWebhookConfigurations (strategy: webhookconfiguration.py)."""
from __future__ import annotations

from ....api.defaulting import admissionregistration as defaulting
from ...cel import validation as cel_validation
from ...tables import admissionregistration as tables
from ..definition import ResourceDefinition
from ..registry import register
from .webhookconfiguration import GROUP, WebhookConfigurationStrategy

VALIDATING_WEBHOOK_CONFIGURATIONS = register(ResourceDefinition(
    GROUP, "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations",
    "validatingwebhookconfiguration", False, "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
    categories=("api-extensions",),
    strategy=WebhookConfigurationStrategy(),
    defaulter=defaulting.set_defaults_validating_webhook_configuration, defaults_outside_spec=True,
    validate=lambda obj: cel_validation.validate_webhook_configuration(obj, False),       # structural + CEL
    validate_update=lambda new, old: cel_validation.validate_webhook_configuration_update(new, old, False),
    columns=tables.webhook_columns, printer=tables.print_webhook_configuration,
))
