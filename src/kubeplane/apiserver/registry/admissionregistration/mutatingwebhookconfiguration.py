"""MutatingWebhookConfigurations (strategy: webhookconfiguration.py)."""
from __future__ import annotations

from ....api.defaulting import admissionregistration as defaulting
from ...tables import admissionregistration as tables
from ..definition import ResourceDefinition
from ..registry import register
from .webhookconfiguration import GROUP, WebhookConfigurationStrategy, validate_configuration

MUTATING_WEBHOOK_CONFIGURATIONS = register(ResourceDefinition(
    GROUP, "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", "mutatingwebhookconfiguration",
    False, "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
    categories=("api-extensions",),
    strategy=WebhookConfigurationStrategy(),
    defaulter=defaulting.set_defaults_mutating_webhook_configuration, defaults_outside_spec=True,
    validate=validate_configuration(True)[0],
    validate_update=validate_configuration(True)[1],
    columns=tables.webhook_columns, printer=tables.print_webhook_configuration,
))
