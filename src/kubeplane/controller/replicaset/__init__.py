"""The ReplicaSet controller. Upstream: pkg/controller/replicaset."""
from .replica_set import BURST_REPLICAS, ReplicaSetController, ReplicaSetControllerOptions

__all__ = ["BURST_REPLICAS", "ReplicaSetController", "ReplicaSetControllerOptions"]
