"""The resource registry: one ResourceDefinition per served resource (definition.py) in one
table (registry.py: REGISTRY), one module per kind (core/, apps/, …, registered by builtin.py),
and the strategies the generic write path calls (strategy.py)."""
from .definition import ResourceDefinition, TypeDefinition
from .registry import REGISTRY, register, register_type, resource_definition, strategy_for
from .strategy import Strategy
from . import builtin  # noqa: F401  (registers the built-in kinds)
from . import scheme

__all__ = ["REGISTRY", "ResourceDefinition", "Strategy", "TypeDefinition", "register",
           "register_type", "resource_definition", "scheme", "strategy_for"]
