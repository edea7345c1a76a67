"""The namespace controller. Upstream: pkg/controller/namespace."""
from .namespace_controller import NAMESPACE_DELETION_GRACE_PERIOD, NamespaceController

__all__ = ["NAMESPACE_DELETION_GRACE_PERIOD", "NamespaceController"]
