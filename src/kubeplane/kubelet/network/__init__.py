"""Pod networking for the process runtime: a network namespace, a veth pair on the node's
bridge and an address from the node's podCIDR per pod (pod_network.py), host-local address
records on disk (ipam.py), iproute2 as the tool (ip.py)."""
from .pod_network import MODES, NetworkError, PodNetwork, netns_name, teardown_recorded, unavailable_reason

__all__ = ["MODES", "NetworkError", "PodNetwork", "netns_name", "teardown_recorded", "unavailable_reason"]
