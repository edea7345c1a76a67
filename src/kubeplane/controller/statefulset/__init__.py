"""The StatefulSet controller. Upstream: pkg/controller/statefulset"""
from .stateful_set import StatefulSetController, StatefulSetControllerOptions

__all__ = ["StatefulSetController", "StatefulSetControllerOptions"]
