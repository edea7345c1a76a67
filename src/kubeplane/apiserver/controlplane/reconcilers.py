"""The lease endpoint reconciler: `default/kubernetes` lists every live API server.

Each API server keeps a lease under /registry/masterleases/<its IP> (an Endpoints object naming
that IP, as upstream stores it) and renews it every --endpoint-reconciler-interval (10 s); the
lease lives LEASE_TTL (15 s) past its last renewal. Every round, each server lists the live
leases and, when the Endpoints of the kubernetes Service do not name exactly those IPs (sorted)
with its port, rewrites them, and the EndpointSlice alike. An API server that stops cleanly
removes its lease and reconciles at once (upstream's RemoveEndpoints); one killed drops out
when its lease has expired, at the next round of any other server.

Where upstream attaches an etcd lease (TTL) to the key, the expiry here is written into the
object (annotation EXPIRES, the renewing server's clock) and judged by the reader's clock, so
the same code runs on every storage backend; API servers' clocks must agree to well under
LEASE_TTL (NTP does that). An expired lease is deleted by the first server that sees it,
guarded by the revision it read, so a renewal racing it wins.

As upstream: the IPs are the key, so API servers behind one Service share one port (each
writes its own port: servers on different ports would keep rewriting it); a round that lists
no lease at all (its own was just renewed) refuses to empty the endpoints.

Upstream: pkg/controlplane/reconcilers/lease.go (storageLeases, leaseEndpointReconciler,
checkEndpointSubsetFormatWithLease), pkg/controlplane/reconcilers/none.go,
DefaultEndpointReconcilerTTL (15 s) and --endpoint-reconciler-type (lease).
"""
from __future__ import annotations

import ipaddress
import logging
from typing import TYPE_CHECKING, Any

from ...storage import KeyExists, KeyNotFound, RevisionMismatch
from ...utils.clock import parse_rfc3339, rfc3339_micro

if TYPE_CHECKING:
    from ..server import APIServer

log = logging.getLogger(__name__)

Obj = dict[str, Any]
LEASES_PREFIX = "/registry/masterleases/"
LEASE_TTL = 15.0                       # seconds: DefaultEndpointReconcilerTTL
EXPIRES = "kubeplane.io/lease-expire-time"


def lease_key(ip: str) -> str:
    return LEASES_PREFIX + ip


def _sort_key(ip: str) -> tuple[int, int]:
    addr = ipaddress.ip_address(ip)
    return addr.version, int(addr)


class StorageLeases:
    """Upstream: storageLeases — the API servers' IPs with a live lease."""

    def __init__(self, api: APIServer, ttl: float = LEASE_TTL) -> None:
        self.api = api
        self.ttl = ttl

    async def list_leases(self) -> list[str]:
        """The IPs whose lease has not expired, sorted; expired ones are deleted on the way."""
        kvs, _ = await self.api.storage.list(LEASES_PREFIX)
        now, live = self.api.clock.now(), []
        for kv in kvs:
            ip = _lease_ip(kv.obj)
            if ip and _expires(kv.obj) > now:
                live.append(ip)
                continue
            try:
                await self.api.storage.delete(kv.key, kv.mod_revision)    # renewed meanwhile: kept
                log.info("removed the expired lease of API server %s", ip or kv.key)
            except (KeyNotFound, RevisionMismatch):
                pass
        return sorted(live, key=_sort_key)

    async def update_lease(self, ip: str) -> None:
        """Create or renew ip's lease (guarded by the revision read; a race is retried once)."""
        key = lease_key(ip)
        for _ in range(2):
            kv = await self.api.storage.get(key)
            obj = lease_object(ip, self.api.clock.now() + self.ttl,
                               0 if kv is None else int(kv.obj["metadata"].get("generation", 0)) + 1)
            try:
                if kv is None:
                    await self.api.storage.create(key, obj)
                else:
                    await self.api.storage.update(key, obj, kv.mod_revision)
                return
            except (KeyExists, KeyNotFound, RevisionMismatch):
                continue

    async def remove_lease(self, ip: str) -> None:
        try:
            await self.api.storage.delete(lease_key(ip))
        except KeyNotFound:
            pass


def lease_object(ip: str, expires: float, generation: int) -> Obj:
    """Upstream's lease value: an Endpoints named by the IP with that one address (the
    generation bumped at each renewal, as UpdateLease does to force a write)."""
    return {"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": ip, "generation": generation, "annotations": {EXPIRES: rfc3339_micro(expires)}},
            "subsets": [{"addresses": [{"ip": ip}]}]}


def _lease_ip(obj: Obj) -> str:
    try:
        ip = obj["subsets"][0]["addresses"][0]["ip"]
        return str(ipaddress.ip_address(ip))
    except (KeyError, IndexError, TypeError, ValueError):
        return ""


def _expires(obj: Obj) -> float:
    try:
        return parse_rfc3339(obj["metadata"]["annotations"][EXPIRES])
    except (KeyError, TypeError, ValueError):
        return 0.0


class LeaseEndpointReconciler:
    """Upstream: leaseEndpointReconciler. write(ips, port) stores the Endpoints and the
    EndpointSlice (kubernetesservice.py), unchanged ones not rewritten."""

    def __init__(self, leases: StorageLeases, write: Any) -> None:
        self.leases = leases
        self.write = write
        self.stopped = False

    async def reconcile_endpoints(self, ip: str, port: int) -> None:
        """Renew this server's lease, then make the endpoints name every live one."""
        if self.stopped:
            return
        await self.leases.update_lease(ip)
        await self.do_reconcile(port)

    async def do_reconcile(self, port: int, *, stopping: bool = False) -> None:
        ips = await self.leases.list_leases()
        if not ips:
            if not stopping:         # the last API server stopping: expected, its address stays
                log.error("no master IPs were listed in storage, refusing to erase all endpoints for the "
                          "kubernetes service")
            return
        await self.write(ips, port)

    async def remove_endpoints(self, ip: str, port: int) -> None:
        """Upstream: RemoveEndpoints (at shutdown): drop the lease, reconcile without it."""
        self.stopped = True
        await self.leases.remove_lease(ip)
        await self.do_reconcile(port, stopping=True)


class NoneEndpointReconciler:
    """Upstream: noneEndpointReconciler (--endpoint-reconciler-type=none): leaves them alone."""

    async def reconcile_endpoints(self, ip: str, port: int) -> None:
        pass

    async def remove_endpoints(self, ip: str, port: int) -> None:
        pass
