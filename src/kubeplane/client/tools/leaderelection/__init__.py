"""Leader election on coordination.k8s.io/v1 Leases.

Upstream: client-go tools/leaderelection
"""
from .leaderelection import (
    JITTER_FACTOR,
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElector,
    validate_config,
)
from .resourcelock import LeaderElectionRecord, LeaseLock

__all__ = [
    "JITTER_FACTOR", "LeaderCallbacks", "LeaderElectionConfig", "LeaderElectionRecord", "LeaderElector",
    "LeaseLock", "validate_config",
]
