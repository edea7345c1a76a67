"""Deleting a namespace's content. Upstream: pkg/controller/namespace/deletion."""
from .namespaced_resources_deleter import (
    FINALIZER_KUBERNETES, NamespacedResourcesDeleter, ResourcesRemainingError, deletable_resources, finalized,
)

__all__ = ["FINALIZER_KUBERNETES", "NamespacedResourcesDeleter", "ResourcesRemainingError", "deletable_resources",
           "finalized"]
