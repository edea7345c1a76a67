"""The resource registry: one ResourceDefinition per served resource (definition.py) in one
table (registry.py: REGISTRY), one module per kind (core/, apps/, …, registered by builtin.py),
and the strategies the generic write path calls (strategy.py)."""
from typing import cast

from ...api.resources import ResourceInfo
from .definition import ResourceDefinition, TypeDefinition
from .registry import REGISTRY, register, register_type
from .strategy import Strategy, strategy_for
from . import builtin  # noqa: F401  (registers the built-in kinds)
from . import scheme

__all__ = ["REGISTRY", "ResourceDefinition", "Strategy", "TypeDefinition", "register",
           "register_type", "resource_definition", "scheme", "strategy_for"]


def resource_definition(ri: ResourceInfo) -> ResourceDefinition:
    """A served resource's whole definition: ri itself when it came from the registry (what the
    server routes), else the registered one of the same group, version and plural (a
    ResourceInfo of kubeplane.api.resources)."""
    if isinstance(ri, ResourceDefinition):
        return ri
    return cast(ResourceDefinition, REGISTRY.lookup(ri.group, ri.version, ri.plural))
