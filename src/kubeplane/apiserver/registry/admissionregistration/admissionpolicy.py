"""Validating and MutatingAdmissionPolicies and their bindings (stored and validated; evaluating
the CEL is not here). Upstream: pkg/registry/admissionregistration/{validating,mutating}admissionpolicy
and ...binding/strategy.go (generation follows spec; ValidatingAdmissionPolicy has /status)."""
from __future__ import annotations

from ..strategy import Strategy

GROUP = "admissionregistration.k8s.io"
_DEF = "io.k8s.api.admissionregistration.v1."


class PolicyStrategy(Strategy):
    has_status = True
    sets_generation = True


class GenerationStrategy(Strategy):
    sets_generation = True

