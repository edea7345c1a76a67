"""The in-tree plugins and the default profile's plugin set and score weights.

Upstream: framework/plugins/registry.go and apis/config/v1/default_plugins.go. Order
matters: filters run in this order and a node is rejected by the first failing one.
"""
from __future__ import annotations

from .defaultbinder import DefaultBinder
from .defaultpreemption import DefaultPreemption
from .interpodaffinity import InterPodAffinity
from .nodeaffinity import NodeAffinity
from .nodename import NodeName
from .nodeports import NodePorts
from .noderesources import BalancedAllocation, Fit
from .nodeunschedulable import NodeUnschedulable
from .podtopologyspread import PodTopologySpread
from .queuesort import PrioritySort
from .tainttoleration import TaintToleration
from .volumebinding import VolumeBinding

# (plugin class, score weight) in upstream's MultiPoint order; weight 0: no Score.
DEFAULT_PLUGINS: tuple[tuple[type, int], ...] = (
    (NodeUnschedulable, 0),
    (NodeName, 0),
    (TaintToleration, 3),
    (NodeAffinity, 2),
    (NodePorts, 0),
    (Fit, 1),
    (VolumeBinding, 0),
    (PodTopologySpread, 2),
    (InterPodAffinity, 2),
    (DefaultPreemption, 0),
    (BalancedAllocation, 1),
    (DefaultBinder, 0),
)

__all__ = [
    "DEFAULT_PLUGINS", "BalancedAllocation", "DefaultBinder", "DefaultPreemption", "Fit", "InterPodAffinity",
    "NodeAffinity", "NodeName", "NodePorts", "NodeUnschedulable", "PodTopologySpread", "PrioritySort",
    "TaintToleration", "VolumeBinding",
]
