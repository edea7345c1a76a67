"""The ReplicationController controller. Upstream: pkg/controller/replication."""
from .replication_controller import CONTROLLER_NAME, ReplicationManager

__all__ = ["CONTROLLER_NAME", "ReplicationManager"]
