"""Node heartbeats through Leases in kube-node-lease.

Upstream: pkg/kubelet/nodelease + component-helpers/apimachinery/lease/controller.go. Each
node owns Lease kube-node-lease/<node>: holderIdentity the node, leaseDurationSeconds 40,
renewed every 10 s (a quarter of the duration), owned by its Node (ownerReference, so the
garbage collector removes it with the Node). The node lifecycle controller reads renewTime.
"""
from __future__ import annotations

import logging

import msgspec

from ..api import errors
from ..api.types import coordination_v1, core_v1, meta_v1
from ..client.clientset import Clientset
from ..utils.clock import rfc3339_micro

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40
RENEW_INTERVAL = LEASE_DURATION_SECONDS * 0.25       # 10 s (renewIntervalFraction 0.25)


def new_lease(node: core_v1.Node, now: float) -> coordination_v1.Lease:
    """Upstream: controller.newLease (with setNodeOwnerFunc's ownerReference)."""
    name = node.metadata.name or ""
    return coordination_v1.Lease(
        metadata=meta_v1.ObjectMeta(name=name, namespace=LEASE_NAMESPACE, owner_references=[
            meta_v1.OwnerReference(api_version="v1", kind="Node", name=name, uid=node.metadata.uid or "")]),
        spec=coordination_v1.LeaseSpec(holder_identity=name, lease_duration_seconds=LEASE_DURATION_SECONDS,
                                       renew_time=rfc3339_micro(now)))


class LeaseRenewer:
    """Keeps one node's Lease fresh. latest: the Lease as last read or written (None: unknown)."""

    def __init__(self, clientset: Clientset, node: core_v1.Node) -> None:
        self.clientset, self.node = clientset, node
        self.latest: coordination_v1.Lease | None = None
        self.renewals = 0
        self._leases = clientset.coordination_v1().leases(LEASE_NAMESPACE)

    async def sync(self, now: float) -> None:
        """Create the lease if missing, else renew it. Upstream: controller.sync

        Renewing updates the cached copy, so a steady node costs one PUT per interval; on
        a conflict or a missing lease the cache is dropped and the next interval re-reads.
        """
        try:
            if self.latest is None:
                self.latest = await self._ensure(self._leases, now)
                return
            self.latest = await self._leases.update(renewed(self.latest, self.node.metadata.name, now))
            self.renewals += 1
        except (errors.Conflict, errors.NotFound):
            self.latest = None

    async def _ensure(self, leases, now: float) -> coordination_v1.Lease:  # type: ignore[no-untyped-def]
        """Upstream: backoffEnsureLease / ensureLease (GET, create on NotFound)."""
        try:
            lease = await leases.get(self.node.metadata.name)
        except errors.NotFound:
            return await leases.create(new_lease(self.node, now))
        return await leases.update(renewed(lease, self.node.metadata.name, now))


def renewed(lease: coordination_v1.Lease, holder: str | None, now: float) -> coordination_v1.Lease:
    """lease with renewTime now and holderIdentity holder, leaving lease itself as it was (a
    copy of the spec only: the update sends a fresh dict of the rest, so nothing else needs
    one). Upstream: controller.newLease from a base lease (base.DeepCopy(), then RenewTime)."""
    spec = lease.spec or coordination_v1.LeaseSpec()
    return msgspec.structs.replace(lease, spec=msgspec.structs.replace(
        spec, renew_time=rfc3339_micro(now), holder_identity=holder))
