"""The node lifecycle controller and the taint eviction controller it runs.

Upstream: pkg/controller/nodelifecycle, pkg/controller/tainteviction.
"""
from .node_lifecycle_controller import NodeLifecycleController, NodeLifecycleOptions
from .tainteviction import TaintEvictionController

__all__ = ["NodeLifecycleController", "NodeLifecycleOptions", "TaintEvictionController"]
