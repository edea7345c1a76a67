"""Mutating and ValidatingWebhookConfigurations (stored and validated; calling the webhooks is
the admission chain's, not here). Upstream: pkg/registry/admissionregistration/
{mutating,validating}webhookconfiguration/strategy.go (generation follows the webhooks)."""
from __future__ import annotations

from ..strategy import Obj, Strategy

GROUP = "admissionregistration.k8s.io"


class WebhookConfigurationStrategy(Strategy):
    """Upstream: PrepareForCreate sets generation 1; PrepareForUpdate bumps it when webhooks change."""

    def prepare_for_create(self, obj: Obj) -> None:
        obj["metadata"]["generation"] = 1

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        gen = old["metadata"].get("generation", 0)
        new["metadata"]["generation"] = gen + 1 if new.get("webhooks") != old.get("webhooks") else gen

