"""The Node authorization mode (`--authorization-mode=Node,RBAC`): kubelets read only what the
pods bound to their node use, and write only their own Node, Lease and pods' status (with the
NodeRestriction admission plugin). Upstream: plugin/pkg/auth/authorizer/node."""
from .node_authorizer import NodeAuthorizer, node_identity

__all__ = ["NodeAuthorizer", "node_identity"]
