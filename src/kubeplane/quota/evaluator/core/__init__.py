"""The evaluators for core/v1 kinds that use more than an object count, and the registry of all
evaluators. Upstream: pkg/quota/v1/evaluator/core."""
from .registry import IGNORED_RESOURCES, LEGACY_OBJECT_COUNT_ALIASES, Registry, new_registry

__all__ = ["IGNORED_RESOURCES", "LEGACY_OBJECT_COUNT_ALIASES", "Registry", "new_registry"]
