"""Services: the definition and strategy (strategy.py), and allocation as upstream does it —
ClusterIPs from the service CIDR, NodePorts from the node port range, repaired from the stored
Services at start (ipallocator.py, portallocator.py, alloc.py, repair.py). Upstream:
pkg/registry/core/service/."""
