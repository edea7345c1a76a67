"""ClusterIPs and NodePorts shared by every API server on one storage, as upstream 1.37 keeps them.

- A ClusterIP is taken by creating the networking.k8s.io/v1 IPAddress named by it (key
  /registry/ipaddresses/<ip>, spec.parentRef the Service): the storage's create-if-absent is
  the arbiter, so two API servers can never both take one IP. Giving it back deletes the
  object, guarded by its revision and only when its parentRef is the releasing Service.
  Upstream: the IPAddress-based ipallocator (MultiCIDRServiceAllocator, GA in 1.33).
- The NodePorts are the RangeAllocation bitmap at /registry/ranges/servicenodeports (range
  "30000-32767", data the big-endian bytes of the bitmap, bit i = port base+i), every change a
  write guarded by the revision read (a conflict reads again). Upstream: the etcd-backed
  service allocator (pkg/registry/core/service/allocator/storage/storage.go, tryUpdate).

The Allocators (alloc.py) keep choosing in memory, from a local view of these; each step that
changes them runs with their journals on (Range.journal, PortAllocator.journal), and this
module writes what the journal recorded. A pick another server took meanwhile (the IPAddress
exists, the port's bit is set) is a conflict: the step is reverted and tried again with the
view corrected, up to ATTEMPTS times. The view is refreshed where a stale one would give a
wrong answer: a requested IP is looked up in storage, the bitmap re-read (from the cache) when
its revision moved. An IP another server released stays taken in this server's view until the
repair loop (repair.py, every 3 minutes) reloads it: a random pick among a /12 rarely meets it.

Upstream: pkg/registry/core/service/ipallocator/ipallocator.go (createIPAddress,
allocateNextService), pkg/registry/core/service/allocator/storage/storage.go.
"""
from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from .....api import errors
from .....storage import KeyExists, KeyNotFound, RevisionMismatch, StorageError

if TYPE_CHECKING:
    from .alloc import Allocators
    from .ipallocator import Range
    from .portallocator import PortAllocator

log = logging.getLogger(__name__)
T = TypeVar("T")

Obj = dict[str, Any]
Entry = tuple[str, int, Any]            # (IPv4 | IPv6 | "port", +1 taken / -1 given back, IP or port)
IP_PREFIX = "/registry/ipaddresses/"    # networking/ipaddress.py's key: cluster-scoped, by name
RANGE_KEY = "/registry/ranges/servicenodeports"
MANAGED_BY = "ipallocator.k8s.io"
ATTEMPTS = 10


class Conflict(Exception):
    """Another API server took an IP or a port this step picked."""


def ip_key(ip: str) -> str:
    return IP_PREFIX + ip


def ip_address_object(ip: str, family: str, svc: Obj, now: str, uid: str) -> Obj:
    """Upstream: ipallocator's IPAddress for a Service (labels ip-family and managed-by)."""
    meta = svc.get("metadata") or {}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
            "metadata": {"name": ip, "uid": uid, "creationTimestamp": now,
                         "labels": {"ipaddress.kubernetes.io/ip-family": family,
                                    "ipaddress.kubernetes.io/managed-by": MANAGED_BY}},
            "spec": {"parentRef": {"group": "", "resource": "services", "namespace": meta.get("namespace", ""),
                                   "name": meta.get("name", "")}}}


def range_allocation(port_range: str, offsets: Iterable[int]) -> Obj:
    """Upstream: api.RangeAllocation, data the bitmap's big.Int bytes (big-endian, no leading
    zero bytes): bit i of the number is offset i."""
    offsets = list(offsets)
    size = max(offsets) // 8 + 1 if offsets else 0
    data = bytearray(size)
    for o in offsets:
        data[size - 1 - o // 8] |= 1 << (o % 8)
    return {"apiVersion": "v1", "kind": "RangeAllocation", "metadata": {"name": ""},
            "range": port_range, "data": base64.b64encode(bytes(data)).decode()}


_BITS = [tuple(b for b in range(8) if n >> b & 1) for n in range(256)]


def range_offsets(obj: Obj) -> set[int]:
    """The offsets set in a RangeAllocation's bitmap (a byte at a time: O(bytes + bits set))."""
    data = base64.b64decode(obj.get("data") or "")
    last = len(data) - 1
    return {(last - i) * 8 + b for i, byte in enumerate(data) if byte for b in _BITS[byte]}


def _owned_by(obj: Obj, svc: Obj) -> bool:
    ref = (obj.get("spec") or {}).get("parentRef") or {}
    meta = svc.get("metadata") or {}
    return ref.get("namespace") == meta.get("namespace", "") and ref.get("name") == meta.get("name", "")


class SharedAllocations:
    """The storage side of one API server's Allocators."""

    def __init__(self, api: Any, alloc: Allocators) -> None:
        self.api = api
        self.alloc = alloc
        self.port_revision = -1         # the RangeAllocation revision the local ports mirror
        self.stored_ports: tuple[int, set[int]] = (-1, set())    # (revision, offsets) last read or written

    @property
    def storage(self) -> Any:
        return self.api.storage

    # --- journaling ---------------------------------------------------------------------

    def journaled(self, step: Callable[[], T]) -> tuple[T, list[Entry]]:
        """Run a synchronous allocator step, returning its result and what it changed."""
        journal: list[Entry] = []
        ranges: list[Range | PortAllocator] = [*self.alloc.by_family.values(), self.alloc.node_ports]
        for r in ranges:
            r.journal = journal         # one list for IPs and ports
        try:
            return step(), journal
        finally:
            for r in ranges:
                r.journal = None

    # --- refreshing the local view -----------------------------------------------------

    async def refresh(self, ips: Iterable[Any], ports: bool) -> None:
        """Requested IPs as storage has them; the port bitmap if it moved."""
        for ip in ips:
            if not isinstance(ip, str) or not ip or ip == "None":
                continue
            for r in self.alloc.by_family.values():
                if r.cidr_contains(ip):
                    r.mark(ip, await self.storage.get(ip_key(ip)) is not None)
        if ports:
            await self.refresh_ports()

    async def refresh_ports(self) -> tuple[set[int], int]:
        """Load the stored bitmap into the local view if its revision moved; (offsets, revision)."""
        kv = await self.storage.get(RANGE_KEY)
        revision = 0 if kv is None else kv.mod_revision
        if revision != self.port_revision:
            offsets = set() if kv is None else set(self._offsets(kv))
            self.alloc.node_ports.load(offsets)
            self.port_revision = revision
            return offsets, revision
        return self.alloc.node_ports.offsets(), revision

    # --- writing what a step did -------------------------------------------------------

    async def take(self, entries: list[Entry], svc: Obj) -> None:
        """Store what a step took (and gave back); Conflict, with nothing stored, if another
        server had an IP or a port first (the local view then says so)."""
        created: list[tuple[str, int]] = []
        try:
            for family, delta, value in entries:
                if family != "port" and delta > 0:
                    obj = ip_address_object(value, family, svc, self.api.now(), _uid())
                    try:
                        kv = await self.storage.create(ip_key(value), obj)
                    except KeyExists:
                        raise Conflict(value) from None
                    created.append((value, kv.mod_revision))
            await self.write_ports(entries, check=True)
        except BaseException:
            for ip, revision in created:
                await self._delete_ip(ip, revision)
            raise
        await self.give_back([e for e in entries if e[0] != "port" and e[1] < 0], svc)

    async def give_back(self, entries: list[Entry], svc: Obj) -> None:
        """Store what a step gave back: the Service's IPAddresses deleted, bits cleared."""
        for family, delta, value in entries:
            if family != "port" and delta < 0:
                kv = await self.storage.get(ip_key(value))
                if kv is not None and _owned_by(kv.obj, svc):
                    await self._delete_ip(value, kv.mod_revision)
        if any(e[0] == "port" and e[1] < 0 for e in entries):
            await self.write_ports([e for e in entries if e[0] == "port" and e[1] < 0], check=False)

    async def write_ports(self, entries: list[Entry], *, check: bool) -> None:
        """Apply the port entries to the stored bitmap (guarded; re-read on a conflict). check:
        a port taken here but set in storage is a Conflict (the local view takes storage's)."""
        add = {v for f, d, v in entries if f == "port" and d > 0}
        remove = {v for f, d, v in entries if f == "port" and d < 0}
        if not add and not remove:
            return
        pa = self.alloc.node_ports
        base = pa.port_range.base
        while True:
            kv = await self.storage.get(RANGE_KEY)
            stored = set() if kv is None else self._offsets(kv)
            if check and any(p - base in stored for p in add):
                pa.load(stored)
                self.port_revision = kv.mod_revision if kv is not None else 0
                raise Conflict("node port")
            offsets = (stored | {p - base for p in add}) - {p - base for p in remove}
            obj = range_allocation(str(pa.port_range), offsets)
            try:
                new = (await self.storage.create(RANGE_KEY, obj) if kv is None
                       else await self.storage.update(RANGE_KEY, obj, kv.mod_revision))
            except (KeyExists, KeyNotFound, RevisionMismatch):
                continue
            self.stored_ports = (new.mod_revision, offsets)
            # The view keeps what it holds (allocations in flight in this server) and what is stored:
            # it may only be stricter than storage, which decides every conflict anyway.
            pa.load(pa.offsets() | offsets)
            self.port_revision = new.mod_revision
            return

    # --- the repair loop's side (repair.py runs in between) -------------------------------

    async def load(self) -> tuple[dict[str, Any], int]:
        """Add every stored IPAddress and the stored bitmap to the local view (so the repair
        sees them as allocated, and frees those no Service holds only after its leak count);
        returns the IPAddresses by IP and the bitmap's revision."""
        kvs, _ = await self.storage.list(IP_PREFIX)
        stored = {kv.obj["metadata"]["name"]: kv for kv in kvs}
        for ip in stored:
            for r in self.alloc.by_family.values():
                r.mark(ip, True)
        kv = await self.storage.get(RANGE_KEY)
        if kv is not None:
            self.alloc.node_ports.load(self.alloc.node_ports.offsets() | range_offsets(kv.obj))
        return stored, 0 if kv is None else kv.mod_revision

    async def publish(self, stored: dict[str, Any], port_revision: int, services: list[Obj]) -> bool:
        """Make storage say what the repaired view says: an IPAddress for every Service IP
        without one, none for an IP the view freed, the bitmap as the view has it (guarded by
        port_revision: False if it moved, for the repair to run again)."""
        holders = {ip: svc for svc in services for ip in (svc.get("spec") or {}).get("clusterIPs") or []
                   if isinstance(ip, str)}
        local = {str(ip): r.family for r in self.alloc.by_family.values() for ip in r}
        for ip, family in local.items():
            if ip not in stored and ip in holders:
                try:
                    await self.storage.create(ip_key(ip), ip_address_object(ip, family, holders[ip], self.api.now(),
                                                                            _uid()))
                except KeyExists:
                    pass
        for ip, kv in stored.items():       # only the allocator's own (upstream's repairip checks managed-by)
            labels = kv.obj["metadata"].get("labels") or {}
            if ip not in local and labels.get("ipaddress.kubernetes.io/managed-by") == MANAGED_BY:
                await self._delete_ip(ip, kv.mod_revision)
        pa = self.alloc.node_ports
        obj = range_allocation(str(pa.port_range), pa.offsets())
        try:
            new = (await self.storage.create(RANGE_KEY, obj) if port_revision == 0
                   else await self.storage.update(RANGE_KEY, obj, port_revision))
        except (KeyExists, KeyNotFound, RevisionMismatch):
            return False
        self.port_revision = new.mod_revision
        return True

    def _offsets(self, kv: Any) -> set[int]:
        """The stored bitmap's offsets, decoded once per revision (the caller may not change them)."""
        revision, offsets = self.stored_ports
        if revision != kv.mod_revision:
            offsets = range_offsets(kv.obj)
            self.stored_ports = (kv.mod_revision, offsets)
        return offsets

    async def _delete_ip(self, ip: str, revision: int) -> None:
        try:
            await self.storage.delete(ip_key(ip), revision)
        except (KeyNotFound, RevisionMismatch):
            pass


def _uid() -> str:
    from ....objects import new_uid
    return new_uid()


async def begin(shared: SharedAllocations, step: Callable[[], Any], svc: Obj, old: Obj | None) -> Any:
    """Run an allocation step (alloc.allocate_create/allocate_update on svc) until what it took
    is stored without conflict; returns its Transaction. svc's spec is restored between tries."""
    import copy
    from .alloc import _ips, needs_node_port
    spec = copy.deepcopy(svc.get("spec"))
    old_ips = set(_ips(old.get("spec") or {}, "clusterIPs")) if old is not None else set()
    ports = needs_node_port(svc) or (old is not None and needs_node_port(old))
    for attempt in range(1, ATTEMPTS + 1):
        new_spec = svc.get("spec") or {}
        requested = [ip for ip in [*_ips(new_spec, "clusterIPs"), new_spec.get("clusterIP")] if ip not in old_ips]
        await shared.refresh(requested, ports)
        txn, entries = shared.journaled(step)
        try:
            await shared.take(entries, svc)
        except Conflict as err:
            txn.revert()                        # in memory only: nothing of it was stored
            if err.args[0] != "node port":
                for r in shared.alloc.by_family.values():
                    r.mark(err.args[0], True)   # another server's
            svc["spec"] = copy.deepcopy(spec)
            log.debug("allocation conflict (attempt %d): %s", attempt, err)
            continue
        except StorageError as err:
            txn.revert()
            raise errors.InternalError(f"failed to allocate a serviceIP: {err}") from None
        txn.shared, txn.svc = shared, svc       # its commit and revert are stored from now on
        return txn
    raise errors.InternalError("failed to allocate a serviceIP: allocations kept conflicting; try again")
