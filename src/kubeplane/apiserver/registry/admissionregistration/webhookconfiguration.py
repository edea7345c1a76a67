"""Mutating and ValidatingWebhookConfigurations (stored and validated; calling the webhooks is
the admission chain's, not here). Upstream: pkg/registry/admissionregistration/
{mutating,validating}webhookconfiguration/strategy.go (generation follows the webhooks)."""
from __future__ import annotations

from collections.abc import Callable

from ....api.errors import FieldError

from ..strategy import Obj, Strategy

GROUP = "admissionregistration.k8s.io"


class WebhookConfigurationStrategy(Strategy):
    """Upstream: PrepareForCreate sets generation 1; PrepareForUpdate bumps it when webhooks change."""

    def prepare_for_create(self, obj: Obj) -> None:
        obj["metadata"]["generation"] = 1

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        gen = old["metadata"].get("generation", 0)
        new["metadata"]["generation"] = gen + 1 if new.get("webhooks") != old.get("webhooks") else gen



def validate_configuration(mutating: bool) -> tuple[Callable[[Obj], list[FieldError]],
                                                   Callable[[Obj, Obj], list[FieldError]]]:
    """A webhook configuration's validate and validate_update: the structural checks and each
    webhook's matchConditions compiled (the CEL engine imported on first use, not at start)."""
    def validate(obj: Obj) -> list[FieldError]:
        from ...cel import validation as cel_validation
        return cel_validation.validate_webhook_configuration(obj, mutating)

    def validate_update(new: Obj, old: Obj) -> list[FieldError]:
        from ...cel import validation as cel_validation
        return cel_validation.validate_webhook_configuration_update(new, old, mutating)
    return validate, validate_update
