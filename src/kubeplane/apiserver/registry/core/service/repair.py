"""The repair loops: rebuild the ClusterIP and NodePort allocations from the stored Services.

Upstream: pkg/registry/core/service/ipallocator/controller/repair.go and
portallocator/controller/repair.go. They run once before the API server is ready (a restart
finds every allocation again: the Services are the record) and then every 3 minutes.

Each run rebuilds the ranges from the Services and reports, as Warning Events on the Service:
  ClusterIPNotValid, ClusterIPAlreadyAllocated (two Services, one IP), ClusterIPOutOfRange
  (e.g. after --service-cluster-ip-range changed), ClusterIPNotAllocated (repaired),
  and the same for node ports (PortAlreadyAllocated, PortOutOfRange, PortNotAllocated).
An allocation no Service holds is a leak only after 3 runs in a row (numRepairsBeforeLeakCleanup):
a Service being created holds its IP a moment before it is stored.

With stored allocations (shared.py), each run first adds the stored IPAddresses and the
RangeAllocation bitmap to the view, rebuilds it from the Services as above, then writes it back
(kubernetesservice.repair_services): an IPAddress for every Service IP without one, none for an
IP freed as leaked, the bitmap guarded by its revision (again if another server moved it). The
first run reports no "not allocated; repairing" (Services stored before IPAddresses existed).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from .alloc import NONE, Allocators, _ips, _spec, needs_health_check
from .ipallocator import IPV4, IPV6, ErrAllocated, ErrNotInRange, Range, parse_ip
from .portallocator import ErrAllocated as ErrPortAllocated
from .portallocator import ErrNotInRange as ErrPortNotInRange
from .portallocator import PortAllocator

log = logging.getLogger(__name__)
T = TypeVar("T")

Obj = dict[str, Any]
NUM_REPAIRS_BEFORE_LEAK_CLEANUP = 3
REPAIR_INTERVAL = 180.0     # seconds, as upstream's repair loops
IP_COMPONENT = "ipallocator-repair-controller"
PORT_COMPONENT = "portallocator-repair-controller"


@dataclass(frozen=True, slots=True)
class Problem:
    """A Warning Event to record on a Service."""

    svc: Obj
    reason: str
    message: str
    component: str


class Repair:
    """Upstream: ipallocator and portallocator controller.Repair, over the live allocators."""

    def __init__(self, alloc: Allocators) -> None:
        self.alloc = alloc
        self.ip_leaks: dict[str, int] = {}      # counter per leaked IP
        self.port_leaks: dict[int, int] = {}    # counter per leaked port
        # The first run loads the allocations (nothing is persisted besides the Services), so
        # an allocation it does not find is expected, not a "repairing" event.
        self.loaded = False

    def changes(self) -> int:
        """How often the allocators changed: a run whose list is older than a change retries."""
        return sum(r.changes for r in self.alloc.by_family.values()) + self.alloc.node_ports.changes

    def run_once(self, services: list[Obj]) -> list[Problem]:
        """Rebuild every range from services (all of them, every namespace); returns the problems."""
        problems = self.repair_ips(services) + self.repair_ports(services)
        if not self.loaded:
            self.loaded = True
            problems = [p for p in problems if p.reason not in ("ClusterIPNotAllocated", "PortNotAllocated")]
        return problems

    # --- ClusterIPs -----------------------------------------------------------------------

    def repair_ips(self, services: list[Obj]) -> list[Problem]:
        problems: list[Problem] = []
        stored = {fam: {str(ip) for ip in r} for fam, r in self.alloc.by_family.items()}
        rebuilt = {fam: Range(r.cidr, rand=r.rand) for fam, r in self.alloc.by_family.items()}
        for svc in services:
            spec = _spec(svc)
            if spec.get("clusterIP") in (None, "", NONE):
                continue            # didn't need a cluster IP
            for ip in _ips(spec, "clusterIPs") or [spec["clusterIP"]]:
                problems += self._mark_ip(svc, ip, stored, rebuilt)
        for fam, r in rebuilt.items():
            check_leaked(stored[fam], self.ip_leaks, r.allocate, "cluster IP")
            self.alloc.by_family[fam].replace_with(r)
        return problems

    def _mark_ip(self, svc: Obj, ip: Any, stored: dict[str, set[str]], rebuilt: dict[str, Range]) -> list[Problem]:
        addr = parse_ip(ip) if isinstance(ip, str) else None
        if addr is None:
            return [Problem(svc, "ClusterIPNotValid", f"Cluster IP {ip} is not a valid IP; please recreate service",
                            IP_COMPONENT)]
        fam = IPV6 if addr.version == 6 else IPV4
        r = rebuilt.get(fam) or rebuilt[self.alloc.default_family]
        try:
            r.allocate(addr)
        except ErrAllocated:
            return [Problem(svc, "ClusterIPAlreadyAllocated",
                            f"Cluster IP {addr} was assigned to multiple services; please recreate service", IP_COMPONENT)]
        except ErrNotInRange:
            return [Problem(svc, "ClusterIPOutOfRange",
                            f"Cluster IP {addr} is not within the service CIDR {r.cidr}; please recreate service",
                            IP_COMPONENT)]
        self.ip_leaks.pop(str(addr), None)       # it is used, so it can't be leaked
        if str(addr) in stored.get(fam, ()):
            stored[fam].discard(str(addr))       # what stays in stored may have leaked
            return []
        return [Problem(svc, "ClusterIPNotAllocated", f"Cluster IP {addr} is not allocated; repairing", IP_COMPONENT)]

    # --- NodePorts ------------------------------------------------------------------------

    def repair_ports(self, services: list[Obj]) -> list[Problem]:
        problems: list[Problem] = []
        live = self.alloc.node_ports
        stored = set(live)
        rebuilt = PortAllocator(live.port_range, rand=live.rand)
        for svc in services:
            for port in _service_node_ports(svc):
                problems += self._mark_port(svc, port, stored, rebuilt)
        check_leaked(stored, self.port_leaks, rebuilt.allocate, "node port")
        live.replace_with(rebuilt)
        return problems

    def _mark_port(self, svc: Obj, port: int, stored: set[int], rebuilt: PortAllocator) -> list[Problem]:
        try:
            rebuilt.allocate(port)
        except ErrPortAllocated:
            return [Problem(svc, "PortAlreadyAllocated",
                            f"Port {port} was assigned to multiple services; please recreate service", PORT_COMPONENT)]
        except ErrPortNotInRange:
            return [Problem(svc, "PortOutOfRange",
                            f"Port {port} is not within the port range {rebuilt.port_range}; please recreate service",
                            PORT_COMPONENT)]
        self.port_leaks.pop(port, None)
        if port in stored:
            stored.discard(port)
            return []
        return [Problem(svc, "PortNotAllocated", f"Port {port} is not allocated; repairing", PORT_COMPONENT)]


def _service_node_ports(svc: Obj) -> list[int]:
    """Upstream: collectServiceNodePorts (repair) — the ports' node ports, once each (TCP and
    UDP of one port number share a node port), and the health-check node port."""
    ports: dict[int, None] = {}
    for p in _spec(svc).get("ports") or []:
        if isinstance(p, dict) and isinstance(p.get("nodePort"), int) and p["nodePort"]:
            ports[p["nodePort"]] = None
    hc = _spec(svc).get("healthCheckNodePort")
    if needs_health_check(svc) and isinstance(hc, int) and hc:
        ports[hc] = None
    return list(ports)


def check_leaked(stored: Iterable[T], leaks: dict[T, int], allocate: Callable[[T], Any], what: str) -> None:
    """Upstream: checkLeaked (both repair loops) — a value allocated but held by no Service is
    kept for a few runs (a create may be on its way to storage), then freed."""
    for value in stored:
        count = leaks.get(value)
        if count is None:
            log.warning("the %s %s may have leaked: flagging for later clean up", what, value)
            count = NUM_REPAIRS_BEFORE_LEAK_CLEANUP - 1
        if count > 0:
            leaks[value] = count - 1
            allocate(value)
        else:
            leaks.pop(value, None)
            log.warning("the %s %s appears to have leaked: cleaning up", what, value)
