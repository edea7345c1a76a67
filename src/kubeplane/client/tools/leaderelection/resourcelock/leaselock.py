"""A leader-election lock on a coordination.k8s.io/v1 Lease.

Optimistic concurrency comes for free: update() PUTs the Lease last read or written,
resourceVersion included, so a write racing another candidate's gets 409 Conflict and
the elector simply tries again next period.

Upstream: client-go tools/leaderelection/resourcelock/leaselock.go
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .....api.types import coordination_v1, meta_v1
from .....utils.clock import parse_rfc3339, rfc3339_micro
from .interface import EventRecorderLike, LeaderElectionRecord

if TYPE_CHECKING:
    from ....clientset import Clientset


class LeaseLock:
    """Upstream: LeaseLock, resourcelock/leaselock.go"""

    def __init__(self, namespace: str, name: str, clientset: Clientset, identity: str,
                 event_recorder: EventRecorderLike | None = None,
                 labels: dict[str, str] | None = None) -> None:
        self.namespace, self.name = namespace, name
        self._client = clientset.coordination_v1().leases(namespace)
        self._identity = identity
        self.event_recorder = event_recorder
        self.labels = labels
        self.lease: coordination_v1.Lease | None = None     # the last copy read or written

    async def get(self) -> tuple[LeaderElectionRecord, bytes]:
        """Upstream: LeaseLock.Get"""
        self.lease = await self._client.get(self.name)
        record = lease_spec_to_leader_election_record(self.lease.spec or coordination_v1.LeaseSpec())
        return record, record.raw()

    async def create(self, ler: LeaderElectionRecord) -> None:
        """Upstream: LeaseLock.Create"""
        meta = meta_v1.ObjectMeta(name=self.name, namespace=self.namespace,
                                  labels=dict(self.labels) if self.labels else None)
        self.lease = await self._client.create(
            coordination_v1.Lease(metadata=meta, spec=leader_election_record_to_lease_spec(ler)))

    async def update(self, ler: LeaderElectionRecord) -> None:
        """Upstream: LeaseLock.Update"""
        if self.lease is None:
            raise RuntimeError("lease not initialized, call get or create first")
        lease = self.lease.deep_copy()
        lease.spec = leader_election_record_to_lease_spec(ler)
        if self.labels:
            meta = lease.metadata or meta_v1.ObjectMeta()
            meta.labels = {**(meta.labels or {}), **self.labels}
            lease.metadata = meta
        self.lease = await self._client.update(lease)

    def record_event(self, s: str) -> None:
        """Upstream: LeaseLock.RecordEvent"""
        if self.event_recorder is None:
            return
        meta = self.lease.metadata if self.lease is not None else meta_v1.ObjectMeta(
            name=self.name, namespace=self.namespace)
        subject = coordination_v1.Lease(metadata=meta)
        self.event_recorder.eventf(subject, "Normal", "LeaderElection", "%s %s", self._identity, s)

    def identity(self) -> str:
        return self._identity

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"


def lease_spec_to_leader_election_record(spec: coordination_v1.LeaseSpec) -> LeaderElectionRecord:
    """Upstream: LeaseSpecToLeaderElectionRecord, leaselock.go"""
    return LeaderElectionRecord(
        holder_identity=spec.holder_identity or "",
        lease_duration_seconds=spec.lease_duration_seconds or 0,
        leader_transitions=spec.lease_transitions or 0,
        acquire_time=parse_rfc3339(spec.acquire_time) if spec.acquire_time else None,
        renew_time=parse_rfc3339(spec.renew_time) if spec.renew_time else None,
        preferred_holder=spec.preferred_holder or "",
        strategy=spec.strategy or "")


def leader_election_record_to_lease_spec(ler: LeaderElectionRecord) -> coordination_v1.LeaseSpec:
    """Upstream: LeaderElectionRecordToLeaseSpec, leaselock.go

    holderIdentity is always written, "" included: that is how a released lease reads.
    """
    return coordination_v1.LeaseSpec(
        holder_identity=ler.holder_identity,
        lease_duration_seconds=ler.lease_duration_seconds,
        acquire_time=rfc3339_micro(ler.acquire_time) if ler.acquire_time is not None else None,
        renew_time=rfc3339_micro(ler.renew_time) if ler.renew_time is not None else None,
        lease_transitions=ler.leader_transitions,
        preferred_holder=ler.preferred_holder or None,
        strategy=ler.strategy or None)
