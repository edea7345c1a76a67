"""Services as upstream allocates them: ClusterIPs from the service CIDR, NodePorts from the
node port range, repaired from the stored Services at start (upstream:
pkg/registry/core/service/)."""
