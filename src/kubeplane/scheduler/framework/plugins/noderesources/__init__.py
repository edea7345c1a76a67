"""NodeResourcesFit (filter + LeastAllocated score) and NodeResourcesBalancedAllocation.

Upstream: pkg/scheduler/framework/plugins/noderesources/
"""
from .balanced_allocation import BalancedAllocation
from .fit import Fit

__all__ = ["BalancedAllocation", "Fit"]
