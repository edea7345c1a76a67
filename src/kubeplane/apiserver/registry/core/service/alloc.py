"""The Service REST store's allocation hooks: ClusterIPs and NodePorts taken on create and
update, given back on delete, each write one transaction that a failure rolls back.

Upstream: pkg/registry/core/service/storage/{alloc.go,storage.go,transaction.go}
(Allocators.allocateCreate/allocateUpdate/releaseAllocatedResources, initIPFamilyFields,
REST.beginCreate/beginUpdate/afterDelete, normalizeClusterIPs, patchAllocatedValues) and
ValidateServiceClusterIPsRelatedFields (pkg/apis/core/validation).

The choices are made in memory (the allocators here), and, when the API server has a
storage (APIServer.service_alloc.shared), stored as upstream stores them so that several API
servers on one etcd never hand out one IP or port twice: ClusterIPs as IPAddress objects,
NodePorts as the RangeAllocation bitmap (shared.py). The hooks are asynchronous context
managers for that: the allocation is stored on entry, its commit or revert on exit.
An IP outside the service CIDR is refused as 1.37 (ServiceCIDR allocators) refuses it:
`failed to allocate IP 10.0.0.1: the provided network does not match the current range`.
"""
from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable
from typing import Any

from .....api import errors
from .....api.errors import FieldError
from . import ipallocator, portallocator
from .validation import validate_cluster_ips_related_fields
from . import shared
from .ipallocator import IPV4, IPV6, AllocationError, Range, family_of
from .portallocator import PortAllocationOperation, PortAllocator
from .shared import Entry, SharedAllocations
from .....storage import StorageError

log = logging.getLogger(__name__)

Obj = dict[str, Any]
DEFAULT_SERVICE_CIDR = "10.96.0.0/12"
DEFAULT_NODE_PORT_RANGE = "30000-32767"
NONE = "None"


def _invalid(svc: Obj, errs: list[FieldError]) -> errors.Invalid:
    return errors.Invalid("", "Service", (svc.get("metadata") or {}).get("name", ""), errs)


# --- transactions (upstream: storage/transaction.go) ---------------------------------------

class Transaction:
    """Commit or revert a set of allocation steps; `with` commits on success, reverts on error.
    Once its allocation is stored (shared), what commit and revert give back is stored too, by
    flush() (`async with` does it)."""

    def __init__(self) -> None:
        self.commits: list[Callable[[], None]] = []
        self.reverts: list[Callable[[], None]] = []
        self.done = False
        self.shared: SharedAllocations | None = None
        self.svc: Obj = {}
        self.given_back: list[Entry] = []

    def commit(self) -> None:
        if not self.done:
            self.done = True
            self._run(self.commits)

    def revert(self) -> None:
        if not self.done:
            self.done = True
            self._run(list(reversed(self.reverts)))

    def _run(self, fns: list[Callable[[], None]]) -> None:
        if self.shared is None:
            for fn in fns:
                fn()
            return
        _, entries = self.shared.journaled(lambda: [fn() for fn in fns])
        self.given_back += entries

    async def flush(self) -> None:
        """Store what commit() or revert() gave back (a storage failure leaks it: the repair
        loop frees it later, as upstream's)."""
        if self.shared is not None and self.given_back:
            entries, self.given_back = self.given_back, []
            await give_back(self.shared, entries, self.svc)

    async def __aenter__(self) -> Transaction:
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.__exit__(exc_type, exc, tb)
        await self.flush()

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.commit()
        elif issubclass(exc_type, asyncio.CancelledError):
            # Cancelled mid-write (a request timeout): the object may be stored or not. Better
            # to leak than to double-allocate: keep everything; the repair loop frees leaks.
            self.done = True
        else:
            self.revert()


class _Nothing:
    """The transaction of a write that allocates nothing (every kind but Service)."""

    def __enter__(self) -> _Nothing:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    async def __aenter__(self) -> _Nothing:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        pass

    async def flush(self) -> None:
        pass

    def commit(self) -> None:
        pass

    def revert(self) -> None:
        pass


NOTHING = _Nothing()


class _Begin:
    """`async with`: run an allocation step on entry (stored, retried on conflicts, when the
    allocators are shared), commit or revert its Transaction on exit."""

    def __init__(self, alloc: Allocators, step: Callable[[], Transaction], svc: Obj, old: Obj | None,
                 dry_run: bool) -> None:
        self.alloc, self.step, self.svc, self.old, self.dry_run = alloc, step, svc, old, dry_run
        self.txn = Transaction()

    async def __aenter__(self) -> Transaction:
        if self.alloc.shared is None or self.dry_run:
            self.txn = self.step()
        else:
            self.txn = await shared.begin(self.alloc.shared, self.step, self.svc, self.old)
        return self.txn

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self.txn.__aexit__(exc_type, exc, tb)


async def give_back(s: SharedAllocations, entries: list[Entry], svc: Obj) -> None:
    try:
        await s.give_back(entries, svc)
    except StorageError as err:
        log.warning("service allocations not given back in storage (the repair loop will): %s", err)


# --- small predicates (upstream: storage.go, alloc.go) ----------------------------------------

def _spec(svc: Obj) -> Obj:
    spec = svc.get("spec")
    if not isinstance(spec, dict):
        spec = svc["spec"] = {}
    return spec


def needs_cluster_ip(svc: Obj) -> bool:
    return _spec(svc).get("type") != "ExternalName"


def needs_node_port(svc: Obj) -> bool:
    return _spec(svc).get("type") in ("NodePort", "LoadBalancer")


def needs_health_check(svc: Obj) -> bool:
    """Upstream: apiservice.NeedsHealthCheck — a LoadBalancer with externalTrafficPolicy Local."""
    spec = _spec(svc)
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def should_allocate_node_ports(svc: Obj) -> bool:
    spec = _spec(svc)
    if spec.get("type") == "NodePort":
        return True
    if spec.get("type") == "LoadBalancer":
        return spec.get("allocateLoadBalancerNodePorts") is not False
    return False


def _ports(svc: Obj) -> list[Obj]:
    ports = _spec(svc).get("ports")
    return [p for p in ports if isinstance(p, dict)] if isinstance(ports, list) else []


def collect_node_ports(svc: Obj) -> list[int]:
    return [p["nodePort"] for p in _ports(svc) if isinstance(p.get("nodePort"), int) and p["nodePort"]]


def _ips(spec: Obj, field: str) -> list[Any]:
    v = spec.get(field)
    return list(v) if isinstance(v, list) else []


def is_headless(svc: Obj) -> bool:
    spec = _spec(svc)
    return spec.get("type") == "ClusterIP" and _ips(spec, "clusterIPs")[:1] == [NONE]


def _other(family: str) -> str:
    return IPV6 if family == IPV4 else IPV4


# --- field linking done before allocation ---------------------------------------------------

def normalize_cluster_ips(new: Obj, old: Obj | None) -> None:
    """Upstream: normalizeClusterIPs — keep clusterIP and clusterIPs in step for clients that
    set only the singular field (or only patch some other field)."""
    spec, ip = _spec(new), _spec(new).get("clusterIP") or ""
    if old is None:
        if ip and not _ips(spec, "clusterIPs"):
            spec["clusterIPs"] = [ip]
        return
    ospec = _spec(old)
    oip = ospec.get("clusterIP") or ""
    if _ips(ospec, "clusterIPs") and not _ips(spec, "clusterIPs") and oip == ip:
        spec["clusterIPs"] = _ips(ospec, "clusterIPs")
    if oip != ip:
        same = _ips(ospec, "clusterIPs") == _ips(spec, "clusterIPs")
        if oip and not ip:
            if same:
                spec.pop("clusterIPs", None)
        elif same:
            spec["clusterIPs"] = [ip]


def patch_allocated_values(new: Obj, old: Obj) -> None:
    """Upstream: patchAllocatedValues — a resubmitted manifest without clusterIP or nodePorts
    keeps the ones allocated before, so `kubectl replace` of the original YAML succeeds."""
    spec, ospec = _spec(new), _spec(old)
    if needs_cluster_ip(old) and needs_cluster_ip(new):
        if not spec.get("clusterIP") and ospec.get("clusterIP"):
            spec["clusterIP"] = ospec["clusterIP"]
        if not _ips(spec, "clusterIPs") and _ips(ospec, "clusterIPs"):
            spec["clusterIPs"] = _ips(ospec, "clusterIPs")
    if needs_node_port(old) and needs_node_port(new):
        used = set(collect_node_ports(old)) & set(collect_node_ports(new))
        by_name = {p.get("name", ""): p.get("nodePort", 0) for p in _ports(old)}
        for p in _ports(new):
            if not p.get("nodePort"):
                val = by_name.get(p.get("name", ""), 0)
                if val and val not in used:
                    p["nodePort"] = val
    if needs_health_check(old) and needs_health_check(new):
        if not spec.get("healthCheckNodePort") and ospec.get("healthCheckNodePort"):
            spec["healthCheckNodePort"] = ospec["healthCheckNodePort"]


class Allocators:
    """Upstream: Allocators (storage/alloc.go) — the IP ranges by family and the node ports."""

    def __init__(self, ip_ranges: list[Range], node_ports: PortAllocator) -> None:
        self.by_family: dict[str, Range] = {r.family: r for r in ip_ranges}
        self.default_family = ip_ranges[0].family      # --service-cluster-ip-range[0]
        self.node_ports = node_ports
        self.shared: SharedAllocations | None = None   # set by the API server: stored allocations

    @classmethod
    def from_flags(cls, cidrs: str = DEFAULT_SERVICE_CIDR, node_port_range: str = DEFAULT_NODE_PORT_RANGE) -> Allocators:
        return cls([Range.from_string(c.strip()) for c in cidrs.split(",")],
                   PortAllocator(portallocator.parse_port_range(node_port_range)))

    @property
    def primary(self) -> Range:
        return self.by_family[self.default_family]

    # --- create -------------------------------------------------------------------------

    def allocate_create(self, svc: Obj, dry_run: bool) -> Transaction:
        """Upstream: REST.beginCreate + Allocators.allocateCreate."""
        normalize_cluster_ips(svc, None)
        self.init_ip_family_fields(svc, None)
        txn = Transaction()
        try:
            allocated = self.alloc_cluster_ips(svc, dry_run)
            if not dry_run:
                txn.reverts.append(lambda: self.release_ips(allocated))
            op = PortAllocationOperation(self.node_ports, dry_run)
            txn.commits.append(op.commit)
            txn.reverts.append(op.finish)
            if needs_node_port(svc):
                init_node_ports(svc, op)
            if needs_health_check(svc):
                self.alloc_health_check_node_port(svc, op)
        except BaseException:
            txn.revert()
            raise
        return txn

    def init_ip_family_fields(self, svc: Obj, old: Obj | None) -> None:
        """Upstream: initIPFamilyFields — default ipFamilyPolicy and ipFamilies from the request,
        the old object and the cluster's families; Invalid where they cannot be served."""
        spec = _spec(svc)
        if spec.get("type") == "ExternalName":
            return
        if old is not None and _matching_prefer_dual_stack(svc, old):
            return
        if spec.get("ipFamilyPolicy") is None:
            if old is not None and _spec(old).get("ipFamilyPolicy") is not None:
                spec["ipFamilyPolicy"] = _spec(old)["ipFamilyPolicy"]
            elif spec.get("clusterIP") == NONE and not spec.get("selector"):
                spec["ipFamilyPolicy"] = "RequireDualStack"
            else:
                spec["ipFamilyPolicy"] = "SingleStack"
        if errs := validate_cluster_ips_related_fields(svc):
            raise _invalid(svc, errs)
        errs = self._check_policy(svc, old)
        if errs:
            raise _invalid(svc, errs)
        fams = spec["ipFamilies"] = _ips(spec, "ipFamilies")
        if spec.get("clusterIP") == NONE and not spec.get("selector"):
            if not fams:
                fams.append(self.default_family)
            if len(fams) < 2 and spec["ipFamilyPolicy"] != "SingleStack":
                fams.append(_other(fams[0]))
            return
        if spec["ipFamilyPolicy"] == "RequireDualStack" and len(self.by_family) < 2:
            errs.append(errors.invalid("spec.ipFamilyPolicy", spec["ipFamilyPolicy"],
                                       "this cluster is not configured for dual-stack services"))
        for i, fam in enumerate(fams):
            if fam not in self.by_family:
                errs.append(errors.invalid(f"spec.ipFamilies[{i}]", fam, "not configured on this cluster"))
        if errs:
            raise _invalid(svc, errs)
        if not fams:
            fams.append(self.default_family)
        if spec["ipFamilyPolicy"] != "SingleStack" and len(fams) == 1 and len(self.by_family) == 2:
            fams.append(_other(fams[0]))

    def _check_policy(self, svc: Obj, old: Obj | None) -> list[FieldError]:
        """initIPFamilyFields' checks of the policy against clusterIPs/ipFamilies (and their
        inference of ipFamilies from clusterIPs)."""
        spec, errs = _spec(svc), []
        policy = spec["ipFamilyPolicy"]
        ips, fams = _ips(spec, "clusterIPs"), _ips(spec, "ipFamilies")
        if old is not None:
            ospec = _spec(old)
            if policy == "SingleStack":
                if ips == _ips(ospec, "clusterIPs") and len(ips) > 1:
                    spec["clusterIPs"] = ips = ips[:1]
                if fams == _ips(ospec, "ipFamilies") and len(fams) > 1:
                    spec["ipFamilies"] = fams = fams[:1]
            else:
                if ips and len(ips) < len(_ips(ospec, "clusterIPs")):
                    errs.append(errors.invalid("spec.ipFamilyPolicy", policy,
                                               "must be 'SingleStack' to release the secondary cluster IP"))
                if fams and len(fams) < len(_ips(ospec, "ipFamilies")):
                    errs.append(errors.invalid("spec.ipFamilyPolicy", policy,
                                               "must be 'SingleStack' to release the secondary IP family"))
        if policy == "SingleStack":
            if len(ips) == 2:
                errs.append(errors.invalid("spec.ipFamilyPolicy", policy,
                                           "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
            if len(fams) == 2:
                errs.append(errors.invalid("spec.ipFamilyPolicy", policy,
                                           "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
        for i, ip in enumerate(ips):
            if ip == NONE:
                break
            fam = family_of(ip)
            if i >= len(fams):
                if fam not in self.by_family:
                    errs.append(errors.invalid(f"spec.clusterIPs[{i}]", ips, f"{fam} is not configured on this cluster"))
                else:
                    fams.append(fam)
        if fams:
            spec["ipFamilies"] = fams
        return errs

    def alloc_cluster_ips(self, svc: Obj, dry_run: bool) -> dict[str, str]:
        """Upstream: allocClusterIPs — one IP per family in spec.ipFamilies, the requested ones
        honoured; returns what was taken (family -> IP)."""
        spec = _spec(svc)
        if spec.get("type") == "ExternalName":
            return {}
        ips = _ips(spec, "clusterIPs")
        if ips[:1] == [NONE]:
            return {}
        fams = _ips(spec, "ipFamilies")
        ips += [""] * (len(fams) - len(ips))
        to_alloc = {fam: ips[i] for i, fam in enumerate(fams)}
        allocated = self.alloc_ips(svc, to_alloc, dry_run)
        for i, fam in enumerate(fams):
            ips[i] = allocated[fam]
        spec["clusterIPs"] = ips
        spec["clusterIP"] = ips[0]
        return allocated

    def alloc_ips(self, svc: Obj, to_alloc: dict[str, str], dry_run: bool) -> dict[str, str]:
        """Upstream: allocIPs — an Invalid naming spec.clusterIPs when a requested IP cannot be
        had, an InternalError when the range is full; what was taken is given back on failure."""
        allocated: dict[str, str] = {}
        try:
            for fam, ip in to_alloc.items():
                r = self.by_family[fam]
                if not ip:
                    try:
                        allocated[fam] = str(r.dry_run().allocate_next() if dry_run else r.allocate_next())
                    except AllocationError as err:
                        raise errors.InternalError(f"failed to allocate a serviceIP: {err}") from None
                    continue
                try:
                    if dry_run:
                        r.dry_run().allocate(ip)
                    elif not r.cidr_contains(ip):
                        raise ipallocator.ErrMismatchedNetwork()   # Upstream: MetaAllocator.getAllocator
                    else:
                        r.allocate(ip)
                except AllocationError as err:
                    raise _invalid(svc, [errors.invalid("spec.clusterIPs", _ips(_spec(svc), "clusterIPs"),
                                                        f"failed to allocate IP {ip}: {err}")]) from None
                allocated[fam] = ip
        except BaseException:
            if not dry_run:
                self.release_ips(allocated)
            raise
        return allocated

    def release_ips(self, to_release: dict[str, str]) -> None:
        for fam, ip in to_release.items():
            if (r := self.by_family.get(fam)) is not None:   # a family no longer configured
                r.release(ip)

    def alloc_health_check_node_port(self, svc: Obj, op: PortAllocationOperation) -> None:
        """Upstream: allocHealthCheckNodePort (an InternalError when it fails, as upstream)."""
        spec = _spec(svc)
        port = spec.get("healthCheckNodePort") or 0
        if port:
            try:
                op.allocate(port)
            except AllocationError as err:
                raise errors.InternalError(f"failed to allocate requested HealthCheck NodePort {port}: {err}") from None
            return
        try:
            spec["healthCheckNodePort"] = op.allocate_next()
        except AllocationError as err:
            raise errors.InternalError(f"failed to allocate a HealthCheck NodePort 0: {err}") from None

    # --- update -------------------------------------------------------------------------

    def allocate_update(self, new: Obj, old: Obj, dry_run: bool) -> Transaction:
        """Upstream: REST.beginUpdate + Allocators.allocateUpdate. old is the stored object:
        only a copy of its spec is defaulted."""
        old = {**old, "spec": copy.deepcopy(old.get("spec") or {})}
        default_on_read(old, self.default_family)
        patch_allocated_values(new, old)
        normalize_cluster_ips(new, old)
        self.init_ip_family_fields(new, old)
        txn = Transaction()
        try:
            allocated, released = self.update_cluster_ips(new, old, dry_run)
            if not dry_run:
                txn.commits.append(lambda: self.release_ips(released))
                txn.reverts.append(lambda: self.release_ips(allocated))
            op = PortAllocationOperation(self.node_ports, dry_run)
            txn.commits.append(op.commit)
            txn.reverts.append(op.finish)
            self.update_node_ports(new, old, op)
        except BaseException:
            txn.revert()
            raise
        return txn

    def update_cluster_ips(self, new: Obj, old: Obj, dry_run: bool) -> tuple[dict[str, str], dict[str, str]]:
        """Upstream: updateClusterIPs — (allocated, to release on commit) for a type change to or
        from ExternalName and a dual-stack upgrade or downgrade."""
        if _matching_prefer_dual_stack(new, old):
            return {}, {}
        spec, ospec = _spec(new), _spec(old)
        if ospec.get("type") == "ExternalName" and spec.get("type") != "ExternalName":
            return self.alloc_cluster_ips(new, dry_run), {}
        if _ips(ospec, "clusterIPs")[:1] == [NONE]:
            return {}, {}
        if ospec.get("type") != "ExternalName" and spec.get("type") == "ExternalName":
            oips = _ips(ospec, "clusterIPs")
            return {}, {fam: oips[i] for i, fam in enumerate(_ips(ospec, "ipFamilies")) if i < len(oips)}
        ofams, fams = _ips(ospec, "ipFamilies"), _ips(spec, "ipFamilies")
        if len(ofams) == 1 and len(fams) == 2:
            ips = _ips(spec, "clusterIPs")
            if len(ips) < 2:
                ips.append("")
            spec["clusterIPs"] = ips
            allocated = self.alloc_ips(new, {fams[1]: ips[1]}, dry_run)
            ips[1] = allocated[fams[1]]
            return allocated, {}
        if len(ofams) == 2 and len(fams) == 1:
            return {}, {ofams[1]: _ips(ospec, "clusterIPs")[1]}
        return {}, {}

    def update_node_ports(self, new: Obj, old: Obj, op: PortAllocationOperation) -> None:
        """Upstream: txnUpdateNodePorts (+ updateNodePorts, updateHealthCheckNodePort)."""
        if needs_node_port(old) and _spec(new).get("type") in ("ExternalName", "ClusterIP"):
            for port in collect_node_ports(old):
                op.release_deferred_port(port)
        if needs_node_port(new):
            old_ports = collect_node_ports(old)
            taken: set[int] = set()
            for i, p in enumerate(_ports(new)):
                port = p.get("nodePort") or 0
                if not port and not should_allocate_node_ports(new):
                    continue
                if port:
                    if port not in old_ports and port not in taken:
                        try:
                            op.allocate(port)
                        except AllocationError as err:
                            raise _invalid(new, [errors.invalid(f"spec.ports[{i}].nodePort", port, str(err))]) from None
                        taken.add(port)
                else:
                    p["nodePort"] = _allocate_next_port(op)
            new_ports = collect_node_ports(new)
            for port in old_ports:
                if port not in new_ports:
                    op.release_deferred_port(port)
        needed, needs = needs_health_check(old), needs_health_check(new)
        if not needed and needs:
            self.alloc_health_check_node_port(new, op)
        elif needed and not needs and _spec(old).get("healthCheckNodePort"):
            op.release_deferred_port(_spec(old)["healthCheckNodePort"])

    # --- delete -------------------------------------------------------------------------

    def release_allocated_resources(self, svc: Obj) -> None:
        """Upstream: releaseAllocatedResources (REST.afterDelete) — the ClusterIPs, NodePorts
        and health-check node port of a deleted Service go back to their ranges."""
        spec = _spec(svc)
        if spec.get("type") != "ExternalName" and _ips(spec, "clusterIPs")[:1] != [NONE]:
            self.release_ips({family_of(ip): ip for ip in _ips(spec, "clusterIPs") or [spec.get("clusterIP") or ""]
                              if isinstance(ip, str) and ip})
        for port in collect_node_ports(svc):
            self.node_ports.release(port)
        if needs_health_check(svc) and isinstance(spec.get("healthCheckNodePort"), int):
            self.node_ports.release(spec["healthCheckNodePort"])


def init_node_ports(svc: Obj, op: PortAllocationOperation) -> None:
    """Upstream: initNodePorts — a node port per service port number; a port number listed
    twice (TCP and UDP) shares one, a requested one is honoured or refused."""
    ports = _ports(svc)
    by_port: dict[Any, int] = {}
    for i, p in enumerate(ports):
        if not p.get("nodePort") and not should_allocate_node_ports(svc):
            continue
        have = by_port.get(p.get("port"), 0)
        if not have:
            requested = next((q["nodePort"] for q in ports if q.get("port") == p.get("port") and q.get("nodePort")), 0)
            if requested:
                _allocate_port(svc, op, i, requested)
                p["nodePort"] = requested
            else:
                p["nodePort"] = _allocate_next_port(op)
            by_port[p.get("port")] = p["nodePort"]
        elif p.get("nodePort", 0) != have:
            if not p.get("nodePort"):
                p["nodePort"] = have
            else:
                _allocate_port(svc, op, i, p["nodePort"])


def _allocate_port(svc: Obj, op: PortAllocationOperation, i: int, port: Any) -> None:
    try:
        if not isinstance(port, int):
            raise portallocator.ErrNotInRange(str(op.pa.port_range))
        op.allocate(port)
    except AllocationError as err:
        raise _invalid(svc, [errors.invalid(f"spec.ports[{i}].nodePort", port, str(err))]) from None


def _allocate_next_port(op: PortAllocationOperation) -> int:
    try:
        return op.allocate_next()
    except AllocationError as err:
        raise errors.InternalError(f"failed to allocate a nodePort: {err}") from None


def _matching_prefer_dual_stack(new: Obj, old: Obj) -> bool:
    """Upstream: isMatchingPreferDualStackClusterIPFields — an update of a PreferDualStack
    Service that leaves its IPs and families alone neither upgrades nor downgrades it."""
    spec, ospec = _spec(new), _spec(old)
    if spec.get("ipFamilyPolicy") is None or spec.get("type") != ospec.get("type"):
        return False
    if spec.get("type") not in ("ClusterIP", "NodePort", "LoadBalancer"):
        return False
    if spec.get("ipFamilyPolicy") != "PreferDualStack" or ospec.get("ipFamilyPolicy", "PreferDualStack") != "PreferDualStack":
        return False
    return (_ips(spec, "clusterIPs") == _ips(ospec, "clusterIPs")
            and _ips(spec, "ipFamilies") == _ips(ospec, "ipFamilies"))


def default_on_read(svc: Obj, primary: str) -> None:
    """Upstream: defaultOnReadService — Services stored before clusterIPs/ipFamilies existed
    read as if they had them (the update path defaults the old object with it)."""
    normalize_cluster_ips(svc, None)
    spec = _spec(svc)
    if not needs_cluster_ip(svc) or _ips(spec, "ipFamilies"):
        return
    if spec.get("clusterIP") == NONE:
        if not spec.get("selector"):
            spec["ipFamilyPolicy"], spec["ipFamilies"] = "RequireDualStack", [primary, _other(primary)]
        else:
            spec["ipFamilyPolicy"], spec["ipFamilies"] = "SingleStack", [primary]
        return
    ips = _ips(spec, "clusterIPs")
    spec["ipFamilies"] = [IPV6 if family_of(ip) == IPV6 else IPV4 for ip in ips]
    if len(ips) == 1:
        spec["ipFamilyPolicy"] = "SingleStack"
    elif len(ips) == 2:
        spec["ipFamilyPolicy"] = "RequireDualStack"


# --- the hooks the generic store calls (upstream: Store.BeginCreate/BeginUpdate/AfterDelete) ----

def begin_create(alloc: Allocators | None, plural: str, group: str, svc: Obj, dry_run: bool) -> _Begin | _Nothing:
    """The allocation transaction of a create (`async with`): commit once stored, revert if
    anything fails."""
    if alloc is None or plural != "services" or group:
        return NOTHING
    return _Begin(alloc, lambda: alloc.allocate_create(svc, dry_run), svc, None, dry_run)


def begin_update(alloc: Allocators | None, plural: str, group: str, new: Obj, old: Obj, subresource: str,
                 dry_run: bool) -> _Begin | _Nothing:
    """The same for an update of the main resource (a /status write allocates nothing)."""
    if alloc is None or plural != "services" or group or subresource:
        return NOTHING
    # new is defaulted already (registry/store.py update: defaults before admission, as
    # upstream's decoding does, before BeginUpdate)
    return _Begin(alloc, lambda: alloc.allocate_update(new, old, dry_run), new, old, dry_run)


async def after_delete(alloc: Allocators | None, plural: str, group: str, svc: Obj) -> None:
    """Give a deleted Service's IPs and ports back (not for a dry run: the caller's to skip)."""
    if alloc is None or plural != "services" or group:
        return
    if alloc.shared is None:
        alloc.release_allocated_resources(svc)
        return
    _, entries = alloc.shared.journaled(lambda: alloc.release_allocated_resources(svc))
    await give_back(alloc.shared, entries, svc)
