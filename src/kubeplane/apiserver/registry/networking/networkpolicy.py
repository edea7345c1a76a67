"""NetworkPolicies. Upstream: pkg/registry/networking/networkpolicy (strategy.go: generation
follows spec changes; the status field was removed, so there is no status subresource)."""
from __future__ import annotations

from ....api.defaulting import networking as defaulting
from ....api.validation import networking as validation
from ...tables import networking as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Strategy


class NetworkPolicyStrategy(Strategy):
    sets_generation = True


NETWORK_POLICIES = register(ResourceDefinition(
    "networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", "networkpolicy", True,
    "io.k8s.api.networking.v1.NetworkPolicy",
    short_names=("netpol",),
    strategy=NetworkPolicyStrategy(),
    defaulter=defaulting.set_defaults_network_policy,
    validate=validation.validate_network_policy, validate_update=validation.validate_network_policy_update,
    columns=tables.network_policy_columns, printer=tables.print_network_policy,
))
