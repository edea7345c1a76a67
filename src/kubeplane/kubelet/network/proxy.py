"""A kube-proxy for the process runtime's pod network: Services' ClusterIPs and NodePorts
forwarded to their ready endpoints, by a userspace proxy.

    proxy = ServiceProxy(factory, network)      # asks the factory for Services and EndpointSlices
    await proxy.run()                           # until cancelled; nothing when pods have no netns

Why userspace: upstream's nftables proxier needs `nft` (and its kernel modules); this machine
has neither nft nor iptables, so the forwarding is done as upstream's userspace proxier did
(pkg/proxy/userspace, removed in 1.26): a listener per Service port, each connection copied to
an endpoint chosen round-robin, or by client IP with sessionAffinity ClientIP. The ClusterIPs
are made local addresses of the host on an interface of their own (`kps<8 hex>`, a bridge with
no ports, as IPVS mode's kube-ipvs0 dummy), so a pod's packets to a ClusterIP go to its default
gateway, the host, and arrive at the listener; the host reaches them too. NodePorts listen on
the node's address (127.0.0.1). A Service port with no ready endpoint has no listener, so a
connection is refused, as upstream's REJECT rule answers. TCP and UDP. The cluster DNS addresses
(the kubelet's --cluster-dns, kubeadm's 10.96.0.10) are made local the same way, as NodeLocal
DNSCache binds the kube-dns IP on a dummy interface: the cluster DNS server (kubeplane.dns, run
by `up`) listens there.

Clean-up: the interface (and with it every ClusterIP address) is removed when the kubelet stops;
after a kill -9, the next start flushes it, and `kubeplane reset` removes it
(pod_network.teardown_recorded).

Upstream: pkg/proxy/userspace (proxier.go, roundrobin.go: LoadBalancerRR), the endpoint
readiness rules of pkg/proxy/endpointslicecache.go, IPVS mode's kube-ipvs0 for the addresses.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import ipaddress
import json
import logging
import os
import pathlib
import time
from dataclasses import dataclass, field
from typing import Any

from . import ip as iproute
from .pod_network import PodNetwork

log = logging.getLogger(__name__)

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
DEFAULT_AFFINITY_TIMEOUT = 10800          # seconds: upstream's DefaultClientIPServiceAffinitySeconds
CONNECT_TIMEOUT = 5.0
BUFFER = 65536
UDP_IDLE_TIMEOUT = 30.0                   # seconds a UDP client's socket to its endpoint is kept unused


def interface_name(root: pathlib.Path) -> str:
    return "kps" + hashlib.sha256(f"{root}\0services".encode()).hexdigest()[:8]


@dataclass
class PortRule:
    """One Service port as the proxy serves it (updated in place: connections see the latest)."""

    service: str                                  # ns/name:port, for the log
    endpoints: list[tuple[str, int]]
    affinity_timeout: float = 0.0                 # > 0: sessionAffinity ClientIP
    next: int = 0
    sticky: dict[str, tuple[tuple[str, int], float]] = field(default_factory=dict)

    def pick(self, client: str, now: float) -> list[tuple[str, int]]:
        """The endpoints to try, best first. Upstream: LoadBalancerRR.NextEndpoint"""
        if not self.endpoints:
            return []
        if self.affinity_timeout > 0:
            held = self.sticky.get(client)
            if held is not None and held[0] in self.endpoints and now - held[1] < self.affinity_timeout:
                self.sticky[client] = (held[0], now)
                return [held[0], *(e for e in self.endpoints if e != held[0])]
        i = self.next % len(self.endpoints)
        self.next = i + 1
        order = self.endpoints[i:] + self.endpoints[:i]
        if self.affinity_timeout > 0:
            self.sticky[client] = (order[0], now)
        return order


Key = tuple[str, int, str]                    # listen address, port, protocol


def desired_rules(services: list[Any], slices: list[Any], node_address: str) -> dict[Key, PortRule]:
    """(listen address, port, protocol) -> rule for every TCP or UDP Service port with a
    ClusterIP or NodePort and at least one ready endpoint. Upstream: the proxier's serviceMap +
    endpointsMap."""
    by_service: dict[tuple[str, str], list[Any]] = {}
    for s in slices:
        m = s.metadata
        name = (m.labels or {}).get(SERVICE_NAME_LABEL)
        if name and s.address_type in (None, "IPv4"):
            by_service.setdefault((m.namespace or "", name), []).append(s)
    out: dict[Key, PortRule] = {}
    for svc in services:
        spec, m = svc.spec, svc.metadata
        if spec is None or spec.type == "ExternalName":
            continue
        timeout = 0.0
        if spec.session_affinity == "ClientIP":
            cfg = spec.session_affinity_config
            t = cfg.client_ip.timeout_seconds if cfg and cfg.client_ip else None
            timeout = float(t or DEFAULT_AFFINITY_TIMEOUT)
        for p in spec.ports or ():
            proto = p.protocol or "TCP"
            if proto not in ("TCP", "UDP"):
                continue
            eps = _ready_endpoints(by_service.get((m.namespace or "", m.name or ""), []), p.name or "", proto)
            if not eps:
                continue
            label = f"{m.namespace}/{m.name}:{p.name or p.port}"
            for ip in _cluster_ips(spec):
                out[(ip, p.port, proto)] = PortRule(label, eps, timeout)
            if p.node_port and spec.type in ("NodePort", "LoadBalancer"):
                out[(node_address, p.node_port, proto)] = PortRule(label, eps, timeout)
    return out


def _cluster_ips(spec: Any) -> list[str]:
    ips = spec.cluster_ips or ([spec.cluster_ip] if spec.cluster_ip else [])
    return [ip for ip in ips if _is_ipv4(ip)]


def _is_ipv4(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).version == 4
    except ValueError:
        return False


def _ready_endpoints(slices: list[Any], port_name: str, protocol: str = "TCP") -> list[tuple[str, int]]:
    """Ready endpoints' (address, port) for the Service port named port_name (an unset ready
    condition counts as ready, as upstream's)."""
    out: list[tuple[str, int]] = []
    for s in slices:
        port = next((p.port for p in s.ports or ()
                     if (p.name or "") == port_name and (p.protocol or "TCP") == protocol and p.port), None)
        if port is None:
            continue
        for e in s.endpoints or ():
            if e.conditions is not None and e.conditions.ready is False:
                continue
            out += [(a, port) for a in e.addresses or ()]
    return sorted(set(out))


class ServiceProxy:
    """See the module docstring."""

    def __init__(self, factory: Any, network: PodNetwork, *, node_address: str = "127.0.0.1",
                 cluster_dns: tuple[str, ...] | list[str] = ()) -> None:
        self.network = network
        self.node_address = node_address
        self.services = factory.core_v1().services()
        self.slices = factory.discovery_v1().endpointslices()
        self._dirty = asyncio.Event()
        for inf in (self.services, self.slices):
            inf.informer().add_event_handler(self)
        self._rules: dict[Key, PortRule] = {}
        self._servers: dict[Key, Any] = {}         # asyncio servers (TCP), datagram transports (UDP)
        self._addresses: set[str] = set()
        self.interface = ""
        self._conns: set[asyncio.Task[None]] = set()
        self.cluster_dns = [ip for ip in cluster_dns if _is_ipv4(ip)]

    # ResourceEventHandler: any change re-syncs (coalesced).
    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._dirty.set()

    def on_update(self, old: Any, new: Any) -> None:
        self._dirty.set()

    def on_delete(self, obj: Any) -> None:
        self._dirty.set()

    async def run(self) -> None:
        await self.services.informer().wait_synced()
        await self.slices.informer().wait_synced()
        if not self.network.active:
            return                           # pods share the host's network: no ClusterIP routing
        self.interface = interface_name(self.network.state_dir().parent)
        try:
            self._setup_interface()
        except (iproute.IPError, OSError) as err:       # the kubelet goes on; Services route nowhere
            log.error("kube-proxy: cannot make the ClusterIP interface %s: %s", self.interface, err)
            self.interface = ""
            return
        log.info("kube-proxy: userspace proxy for ClusterIPs and NodePorts", extra={"interface": self.interface})
        await self._set_addresses("add", self.cluster_dns)     # the cluster DNS server listens there
        try:
            while True:
                await self._dirty.wait()
                self._dirty.clear()
                await self.sync()
        finally:
            await self.close()

    async def sync(self) -> None:
        """Make the listeners and addresses match the Services and their ready endpoints."""
        want = desired_rules(self.services.lister().list(), self.slices.lister().list(), self.node_address)
        for key in [k for k in self._servers if k not in want]:
            self._servers.pop(key).close()
            self._rules.pop(key, None)
        ips = {key[0] for key in want if key[0] != self.node_address}
        await self._set_addresses("add", sorted(ips - self._addresses))
        for key, rule in want.items():
            old = self._rules.get(key)
            if old is not None:
                old.endpoints, old.affinity_timeout, old.service = rule.endpoints, rule.affinity_timeout, rule.service
                continue
            try:
                if key[2] == "UDP":
                    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
                        lambda rule=rule: UDPProxy(rule), local_addr=key[:2])      # type: ignore[misc]
                    self._servers[key] = transport
                else:
                    self._servers[key] = await asyncio.start_server(
                        functools.partial(self._accept, rule), key[0], key[1], reuse_address=True)
            except OSError as err:
                log.error("kube-proxy: cannot listen for %s on %s:%s/%s: %s", rule.service, *key, err)
                continue
            self._rules[key] = rule
        await self._set_addresses("del", sorted(self._addresses - ips - set(self.cluster_dns)))

    async def close(self) -> None:
        for s in self._servers.values():
            s.close()
        self._servers.clear()
        self._rules.clear()
        for t in list(self._conns):
            t.cancel()
        if self.interface:
            with contextlib.suppress(iproute.IPError):
                iproute.run(["link", "del", self.interface])
            with contextlib.suppress(OSError):
                (self.network.state_dir() / "proxy.json").unlink()
        self._addresses.clear()

    def _setup_interface(self) -> None:
        """The interface holding the ClusterIPs: made, or emptied (a kill -9 left it)."""
        if os.path.exists(f"/sys/class/net/{self.interface}"):
            iproute.run(["addr", "flush", "dev", self.interface])
        else:
            iproute.run_batch([f"link add {self.interface} type bridge", f"link set {self.interface} up"])
        path = self.network.state_dir() / "proxy.json"
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.write_text(json.dumps({"interface": self.interface}))

    async def _set_addresses(self, op: str, ips: list[str]) -> None:
        """Add or delete ClusterIPs on the interface: one `ip -batch`, off the event loop."""
        if not ips:
            return
        try:
            await iproute.arun_batch([f"addr {op} {ip}/32 dev {self.interface}" for ip in ips], force=True)
        except iproute.IPError as err:   # e.g. an address that is there already: the others are done
            log.warning("kube-proxy: addr %s: %s", op, err)
        if op == "add":
            self._addresses.update(ips)
        else:
            self._addresses.difference_update(ips)

    def _accept(self, rule: PortRule, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._proxy(rule, reader, writer))
        self._conns.add(task)
        task.add_done_callback(self._conns.discard)

    async def _proxy(self, rule: PortRule, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Connect to an endpoint (the next one if it refuses) and copy both ways until both
        sides are done. Upstream: userspace proxySocket.ProxyLoop / tryConnect."""
        peer = writer.get_extra_info("peername") or ("", 0)
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        for host, port in rule.pick(str(peer[0]), time.monotonic()):
            try:
                upstream = await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT)
                break
            except (OSError, asyncio.TimeoutError):
                continue
        if upstream is None:
            writer.close()
            return
        ur, uw = upstream
        try:
            await asyncio.gather(_copy(reader, uw), _copy(ur, writer))
        finally:
            for w in (writer, uw):
                w.close()


class UDPProxy(asyncio.DatagramProtocol):
    """A UDP Service port: each client (address, port) gets a socket of its own connected to one
    endpoint, kept while it is used (UDP_IDLE_TIMEOUT), so replies find their way back.
    Upstream: userspace proxySocket's udpProxySocket (ProxyLoop, proxyClient)."""

    def __init__(self, rule: PortRule) -> None:
        self.rule = rule
        self.transport: Any = None
        self.clients: dict[Any, _UDPClient] = {}

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: Any) -> None:
        c = self.clients.get(addr)
        if c is None:
            order = self.rule.pick(str(addr[0]), time.monotonic())
            if not order:
                return
            c = self.clients[addr] = _UDPClient(self, addr)
            c.connecting = asyncio.ensure_future(c.connect(order[0]))
        c.send(data)

    def connection_lost(self, exc: Exception | None) -> None:
        for c in list(self.clients.values()):
            c.close()


class _UDPClient(asyncio.DatagramProtocol):
    def __init__(self, proxy: UDPProxy, addr: Any) -> None:
        self.proxy, self.addr = proxy, addr
        self.backend: Any = None
        self.pending: list[bytes] = []
        self.last = time.monotonic()
        self.timer: asyncio.TimerHandle | None = None
        self.connecting: asyncio.Future[None] | None = None

    async def connect(self, endpoint: tuple[str, int]) -> None:
        try:
            self.backend, _ = await asyncio.get_running_loop().create_datagram_endpoint(
                lambda: self, remote_addr=endpoint)
        except OSError:
            self.close()
            return
        for data in self.pending:
            self.backend.sendto(data)
        self.pending.clear()
        self._arm()

    def send(self, data: bytes) -> None:
        self.last = time.monotonic()
        if self.backend is None:
            self.pending.append(data)
        else:
            self.backend.sendto(data)

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.last = time.monotonic()
        if self.proxy.transport is not None:
            self.proxy.transport.sendto(data, self.addr)

    def _arm(self) -> None:
        self.timer = asyncio.get_running_loop().call_later(UDP_IDLE_TIMEOUT, self._idle)

    def _idle(self) -> None:
        if time.monotonic() - self.last >= UDP_IDLE_TIMEOUT:
            self.close()
        else:
            self._arm()

    def close(self) -> None:
        if self.proxy.clients.get(self.addr) is self:
            del self.proxy.clients[self.addr]
        if self.timer is not None:
            self.timer.cancel()
        if self.backend is not None:
            self.backend.close()


async def _copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while data := await src.read(BUFFER):
            dst.write(data)
            await dst.drain()
        if dst.can_write_eof():
            dst.write_eof()
    except (OSError, RuntimeError):
        dst.close()
