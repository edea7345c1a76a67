"""Locks for leader election. Only Leases: upstream removed the Endpoints and ConfigMap locks.

Upstream: client-go tools/leaderelection/resourcelock
"""
from .interface import (
    LEADER_ELECTION_RECORD_ANNOTATION_KEY,
    LEASES_RESOURCE_LOCK,
    Interface,
    LeaderElectionRecord,
)
from .leaselock import LeaseLock, leader_election_record_to_lease_spec, lease_spec_to_leader_election_record

__all__ = [
    "LEADER_ELECTION_RECORD_ANNOTATION_KEY", "LEASES_RESOURCE_LOCK", "Interface", "LeaderElectionRecord",
    "LeaseLock", "leader_election_record_to_lease_spec", "lease_spec_to_leader_election_record",
]
