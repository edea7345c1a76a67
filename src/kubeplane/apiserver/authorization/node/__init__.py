"""The Node authorization mode (`--authorization-mode=Node,RBAC`): kubelets read only what the
pods bound to their node use, and write only their own Node, Lease and pods' status (with the
NodeRestriction admission plugin). Upstream: plugin/pkg/auth/authorizer/node."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .node_authorizer import NodeAuthorizer, node_identity

if TYPE_CHECKING:
    from ...server import APIServer

__all__ = ["NodeAuthorizer", "new_node_authorizer", "node_identity"]


def new_node_authorizer(api: APIServer) -> NodeAuthorizer:
    """The authorizer `--authorization-mode=Node` puts in the chain (authorization/modes.py);
    its graph is loaded by modes.post_start."""
    return NodeAuthorizer.for_server(api)
