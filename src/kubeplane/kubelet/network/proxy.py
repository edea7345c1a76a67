"""A kube-proxy for the process runtime's pod network: Services' ClusterIPs and NodePorts
forwarded to their ready endpoints, by a userspace proxy.

    proxy = ServiceProxy(factory, network)      # asks the factory for Services and EndpointSlices
    await proxy.run()                           # until cancelled; nothing when pods have no netns

Why userspace: upstream's nftables proxier needs `nft`; this machine has neither nft nor
iptables (the kernel has nf_tables: pyroute2 can write DNAT rules without the binary, measured
and weighed in BENCHMARKS.md "nftables without nft", not taken up), so the forwarding is done
as upstream's userspace proxier did
(pkg/proxy/userspace, removed in 1.26): a listener per Service port, each connection copied to
an endpoint chosen round-robin, or by client IP with sessionAffinity ClientIP. The ClusterIPs
are made local addresses of the host on an interface of their own (`kps<8 hex>`, a bridge with
no ports, as IPVS mode's kube-ipvs0 dummy), so a pod's packets to a ClusterIP go to its default
gateway, the host, and arrive at the listener; the host reaches them too. A Service port with no
ready endpoint has no listener anywhere (its addresses stay local), so a connection is refused,
as upstream's REJECT rule answers. TCP and UDP. The cluster DNS addresses (the kubelet's --cluster-dns, kubeadm's
10.96.0.10) are made local the same way, as NodeLocal DNSCache binds the kube-dns IP on a dummy
interface: the cluster DNS server (kubeplane.dns, run by `up`) listens there.

NodePorts and the node's addresses. Upstream each node's kube-proxy accepts a NodePort on every
local address of its node (`--nodeport-addresses` unset: `-m addrtype --dst-type LOCAL`,
127.0.0.1 included in iptables mode), on the node's primary IPs with `primary`, or on the local
addresses inside the given CIDRs. Here every node of a kubelet is this host, so the node's
addresses are the host's: one listener per NodePort, shared by all the nodes of the kubelet,
on the wildcard address (every address of the host, including ones it gains later, loopback and
the pods' gateways: pods reach a NodePort at their node's address as upstream), on the nodes'
reported address with `primary`, or on each host address inside the CIDRs (read again at each
sync). A second kubelet process on the same host (`kubeplane kubelet` joined to `up`) finds the
port taken and logs it: the first one's listener serves the NodePort for both, as it knows
every endpoint of the cluster. Which client is "local" for the traffic policies: a pod of one
of this kubelet's nodes (its address in that node's podCIDR: upstream's
--detect-local-mode=NodeCIDR) is on that node; the host itself (a local source address) and
outside clients arrive at all of this kubelet's nodes at once, as they share the address.
- externalTrafficPolicy: Local (NodePort and LoadBalancer Services): an outside client's
  connection goes to endpoints on this kubelet's nodes only; pods and the host itself use every
  endpoint (upstream's EXT chain short-circuits "pod traffic" and "LOCAL traffic"). Without a
  local endpoint upstream DROPs the outside client's SYN; a userspace listener has accepted it
  already, so it is reset instead.
- internalTrafficPolicy: Local: a ClusterIP connection from a pod goes to endpoints on the pod's
  node (from the host: on any node of this kubelet); none: reset (upstream: DROP).
- LoadBalancer Services: the load balancer's ingress IPs (status.loadBalancer.ingress, except
  ipMode Proxy) are captured like ClusterIPs (made local here, as upstream's DNAT rules capture
  them on each node) with loadBalancerSourceRanges as the allowed clients, and spec.externalIPs
  likewise; with externalTrafficPolicy Local, the healthCheckNodePort answers an HTTP GET with
  upstream's JSON (200 with local endpoints, else 503), on the NodePort addresses.

Clean-up: the interface (and with it every ClusterIP address) is removed when the kubelet stops;
after a kill -9, the next start flushes it, and `kubeplane reset` removes it
(pod_network.teardown_recorded).

Upstream: pkg/proxy/userspace (proxier.go, roundrobin.go: LoadBalancerRR), the endpoint
readiness rules of pkg/proxy/endpointslicecache.go, IPVS mode's kube-ipvs0 for the addresses,
pkg/proxy/iptables/proxier.go syncProxyRules for the traffic policies and external destinations,
pkg/proxy/healthcheck/service_health.go, pkg/proxy/util/nodeport_addresses.go.
"""
from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import hashlib
import ipaddress
import json
import logging
import os
import pathlib
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import ip as iproute
from .pod_network import PodNetwork

log = logging.getLogger(__name__)

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
DEFAULT_AFFINITY_TIMEOUT = 10800          # seconds: upstream's DefaultClientIPServiceAffinitySeconds
CONNECT_TIMEOUT = 5.0
BUFFER = 65536
LISTEN_RETRY = 5.0                        # seconds before a port that was taken is tried again
HEALTH_CHECK_READ_TIMEOUT = 10.0          # seconds for a health check's request head
UDP_IDLE_TIMEOUT = 30.0                   # seconds a UDP client's socket to its endpoint is kept unused


def interface_name(root: pathlib.Path) -> str:
    return "kps" + hashlib.sha256(f"{root}\0services".encode()).hexdigest()[:8]


Endpoint = tuple[str, int]                    # address, port


@dataclass
class PortRule:
    """One Service port at one address as the proxy serves it (updated in place: connections
    see the latest).

    external: the address is an "external destination" (a NodePort, an externalIP, a load
    balancer IP), governed by externalTrafficPolicy; else a ClusterIP, governed by
    internalTrafficPolicy. A Local policy sends a connection to the endpoints of the client's
    node only (`local`: node name -> its endpoints); see ServiceProxy.endpoints_for."""

    service: str                                  # ns/name:port, for the log
    endpoints: list[Endpoint]
    affinity_timeout: float = 0.0                 # > 0: sessionAffinity ClientIP
    next: int = 0
    sticky: dict[str, tuple[Endpoint, float]] = field(default_factory=dict)
    external: bool = False
    policy_local: bool = False                    # the policy that applies here is Local
    local: dict[str, list[Endpoint]] = field(default_factory=dict)     # node name -> its ready endpoints
    source_ranges: list[Any] = field(default_factory=list)            # load balancer IPs: allowed clients

    def update(self, new: PortRule) -> None:
        self.endpoints, self.affinity_timeout, self.service = new.endpoints, new.affinity_timeout, new.service
        self.external, self.policy_local, self.local = new.external, new.policy_local, new.local
        self.source_ranges = new.source_ranges

    def pick(self, client: str, now: float, candidates: list[Endpoint] | None = None) -> list[Endpoint]:
        """The endpoints to try, best first, among candidates (default: all). Upstream:
        LoadBalancerRR.NextEndpoint"""
        eps = self.endpoints if candidates is None else candidates
        if not eps:
            return []
        if self.affinity_timeout > 0:
            held = self.sticky.get(client)
            if held is not None and held[0] in eps and now - held[1] < self.affinity_timeout:
                self.sticky[client] = (held[0], now)
                return [held[0], *(e for e in eps if e != held[0])]
        i = self.next % len(eps)
        self.next = i + 1
        order = eps[i:] + eps[:i]
        if self.affinity_timeout > 0:
            self.sticky[client] = (order[0], now)
        return order


Key = tuple[str, int, str]                    # listen address, port, protocol
ALL = "0.0.0.0"                               # a NodePort on every local address (--nodeport-addresses unset)


def desired_rules(services: list[Any], slices: list[Any], node_port_addresses: str | list[str] = ALL,
                  local_nodes: set[str] | frozenset[str] = frozenset()) -> dict[Key, PortRule]:
    """(listen address, port, protocol) -> rule for every TCP or UDP Service port with at least
    one ready endpoint: at its ClusterIPs, externalIPs and load balancer IPs (ipMode VIP), and
    its NodePort on each of node_port_addresses (ALL: the wildcard). local_nodes: the nodes
    this proxy serves (their endpoints are the "local" ones). A Service port without ready
    endpoints has no listener: a connection is refused, as upstream's REJECT rule answers.
    Upstream: the proxier's serviceMap + endpointsMap, CategorizeEndpoints
    (pkg/proxy/topology.go), syncProxyRules (pkg/proxy/iptables/proxier.go)."""
    if isinstance(node_port_addresses, str):
        node_port_addresses = [node_port_addresses]
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
        itp_local = spec.internal_traffic_policy == "Local"
        etp_local = spec.external_traffic_policy == "Local" and spec.type in ("NodePort", "LoadBalancer")
        lb_ips = _load_balancer_vips(svc) if spec.type == "LoadBalancer" else []
        ranges = _source_ranges(spec.load_balancer_source_ranges) if lb_ips else []
        for p in spec.ports or ():
            proto = p.protocol or "TCP"
            if proto not in ("TCP", "UDP"):
                continue
            ready = _ready_endpoints(by_service.get((m.namespace or "", m.name or ""), []), p.name or "", proto)
            if not ready:
                continue
            eps = sorted({(a, port) for a, port, _ in ready})
            local: dict[str, list[Endpoint]] = {}
            for a, port, node in ready:
                if node in local_nodes:
                    local.setdefault(node, []).append((a, port))
            rule = functools.partial(PortRule, f"{m.namespace}/{m.name}:{p.name or p.port}", eps, timeout,
                                     local=local)
            for ip in _cluster_ips(spec):
                out[(ip, p.port, proto)] = rule(policy_local=itp_local)
            for ip in (ip for ip in spec.external_ips or () if _is_ipv4(ip)):
                out[(ip, p.port, proto)] = rule(external=True, policy_local=etp_local)
            for ip in lb_ips:
                out[(ip, p.port, proto)] = rule(external=True, policy_local=etp_local, source_ranges=ranges)
            if p.node_port and spec.type in ("NodePort", "LoadBalancer"):
                for addr in node_port_addresses:
                    out[(addr, p.node_port, proto)] = rule(external=True, policy_local=etp_local)
    return out


def service_vips(services: list[Any]) -> set[str]:
    """The addresses made local: every Service's ClusterIPs, externalIPs and load balancer
    VIPs, with or without endpoints, so that a port without a listener there is refused by the
    host, as upstream's REJECT rule answers (rather than routed nowhere)."""
    out: set[str] = set()
    for svc in services:
        spec = svc.spec
        if spec is None or spec.type == "ExternalName":
            continue
        out.update(_cluster_ips(spec), (ip for ip in spec.external_ips or () if _is_ipv4(ip)))
        if spec.type == "LoadBalancer":
            out.update(_load_balancer_vips(svc))
    return out


def _load_balancer_vips(svc: Any) -> list[str]:
    """The load balancer's ingress IPs that kube-proxy captures: all but those with ipMode
    Proxy (the load balancer itself forwards to the node). Upstream: LoadBalancerVIPs
    (pkg/proxy/serviceport.go)."""
    lb = svc.status.load_balancer if svc.status else None
    return [i.ip for i in (lb.ingress or ()) if i.ip and _is_ipv4(i.ip) and i.ip_mode != "Proxy"] if lb else []


def _source_ranges(ranges: list[str] | None) -> list[Any]:
    out = []
    for r in ranges or ():
        with contextlib.suppress(ValueError):
            out.append(ipaddress.ip_network(r.strip(), strict=False))
    return out


def health_check_ports(services: list[Any], slices: list[Any],
                       local_nodes: set[str] | frozenset[str]) -> dict[int, tuple[str, str, int]]:
    """healthCheckNodePort -> (namespace, name, ready endpoints on local_nodes) for every
    LoadBalancer Service with externalTrafficPolicy Local. Upstream: the service health server
    (pkg/proxy/healthcheck/service_health.go), fed by the proxier's local endpoint counts."""
    by_service: dict[tuple[str, str], list[Any]] = {}
    for s in slices:
        name = (s.metadata.labels or {}).get(SERVICE_NAME_LABEL)
        if name and s.address_type in (None, "IPv4"):
            by_service.setdefault((s.metadata.namespace or "", name), []).append(s)
    out: dict[int, tuple[str, str, int]] = {}
    for svc in services:
        spec, m = svc.spec, svc.metadata
        if spec is None or spec.type != "LoadBalancer" or spec.external_traffic_policy != "Local":
            continue
        if not spec.health_check_node_port:
            continue
        count = 0
        for p in spec.ports or ():
            ready = _ready_endpoints(by_service.get((m.namespace or "", m.name or ""), []), p.name or "",
                                     p.protocol or "TCP")
            count = len({a for a, _, node in ready if node in local_nodes})      # upstream: the last port's
        out[spec.health_check_node_port] = (m.namespace or "", m.name or "", count)
    return out


def _cluster_ips(spec: Any) -> list[str]:
    ips = spec.cluster_ips or ([spec.cluster_ip] if spec.cluster_ip else [])
    return [ip for ip in ips if _is_ipv4(ip)]


def _is_ipv4(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).version == 4
    except ValueError:
        return False


def _ready_endpoints(slices: list[Any], port_name: str, protocol: str = "TCP") -> list[tuple[str, int, str]]:
    """Ready endpoints' (address, port, node name) for the Service port named port_name (an
    unset ready condition counts as ready, as upstream's)."""
    out: list[tuple[str, int, str]] = []
    for s in slices:
        port = next((p.port for p in s.ports or ()
                     if (p.name or "") == port_name and (p.protocol or "TCP") == protocol and p.port), None)
        if port is None:
            continue
        for e in s.endpoints or ():
            if e.conditions is not None and e.conditions.ready is False:
                continue
            out += [(a, port, e.node_name or "") for a in e.addresses or ()]
    return sorted(set(out))


class ServiceProxy:
    """See the module docstring."""

    def __init__(self, factory: Any, network: PodNetwork, *, node_address: str = "127.0.0.1",
                 cluster_dns: tuple[str, ...] | list[str] = (),
                 node_port_addresses: tuple[str, ...] | list[str] = ()) -> None:
        self.network = network
        self.node_address = node_address
        self.node_port_addresses = list(node_port_addresses)     # --nodeport-addresses (parse_node_port_addresses)
        self.services = factory.core_v1().services()
        self.slices = factory.discovery_v1().endpointslices()
        self._dirty = asyncio.Event()
        for inf in (self.services, self.slices):
            inf.informer().add_event_handler(self)
        self._rules: dict[Key, PortRule] = {}
        self._servers: dict[Key, Any] = {}         # asyncio servers (TCP), datagram transports (UDP)
        self._health: dict[int, HealthCheck] = {}  # healthCheckNodePort -> its server
        self._addresses: set[str] = set()
        self._unbound: set[Key] = set()            # wanted listeners whose port was taken
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
        log.info("kube-proxy: userspace proxy for ClusterIPs and NodePorts", extra={
            "interface": self.interface, "nodePortAddresses": self.node_port_addresses or "all local addresses"})
        await self._set_addresses("add", self.cluster_dns)     # the cluster DNS server listens there
        try:
            while True:
                await self._dirty.wait()
                self._dirty.clear()
                await self.sync()
        finally:
            await self.close()

    def local_nodes(self) -> set[str]:
        return set(self.network.node_cidrs())

    async def sync(self) -> None:
        """Make the listeners and addresses match the Services and their ready endpoints."""
        services, slices = self.services.lister().list(), self.slices.lister().list()
        local = self.local_nodes()
        node_ports = await self.node_port_listen_addresses()
        want = desired_rules(services, slices, node_ports, local)
        for key in [k for k in self._servers if k not in want]:
            self._servers.pop(key).close()
            self._rules.pop(key, None)
        ips = service_vips(services)
        await self._set_addresses("add", sorted(ips - self._addresses))
        failed = False
        for key, rule in want.items():
            old = self._rules.get(key)
            if old is not None:
                old.update(rule)
                continue
            try:
                if key[2] == "UDP":
                    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
                        lambda rule=rule: UDPProxy(rule, self.endpoints_for),      # type: ignore[misc]
                        local_addr=key[:2])
                    self._servers[key] = transport
                else:
                    self._servers[key] = await asyncio.start_server(
                        functools.partial(self._accept, rule), key[0], key[1], reuse_address=True)
            except OSError as err:       # e.g. another kubelet on this host serves that port
                if key not in self._unbound:             # said once; tried again quietly
                    # In use: another kubelet process on this machine (`up` and `kubeplane kubelet`)
                    # serves the same Service there, for both; anything else is an error.
                    level = logging.INFO if err.errno == errno.EADDRINUSE else logging.ERROR
                    log.log(level, "kube-proxy: cannot listen for %s on %s:%s/%s (retrying every %ss): %s",
                            rule.service, *key, LISTEN_RETRY, err)
                self._unbound.add(key)
                failed = True
                continue
            self._unbound.discard(key)
            self._rules[key] = rule
        self._unbound &= set(want)
        failed |= not await self._sync_health_checks(health_check_ports(services, slices, local), node_ports)
        if failed:                       # tried again until the port is free
            asyncio.get_running_loop().call_later(LISTEN_RETRY, self._dirty.set)
        await self._set_addresses("del", sorted(self._addresses - ips - set(self.cluster_dns)))

    async def node_port_listen_addresses(self) -> list[str]:
        """Where NodePorts listen, from --nodeport-addresses: unset (or a CIDR matching all),
        every local address (the wildcard, as upstream's `--dst-type LOCAL`: addresses the
        host gains later count too); "primary", the nodes' address (their InternalIP); else
        the host's IPv4 addresses inside the CIDRs, read again at every sync.
        Upstream: NodePortAddresses.GetNodeIPs (pkg/proxy/util/nodeport_addresses.go)."""
        spec = self.node_port_addresses
        if not spec:
            return [ALL]
        if spec == ["primary"]:
            return [self.node_address]
        nets = _source_ranges(spec)
        if any(n.prefixlen == 0 and n.version == 4 for n in nets):
            return [ALL]
        try:
            links = json.loads(await asyncio.to_thread(iproute.run, ["-j", "-4", "addr", "show"]) or "[]")
        except (iproute.IPError, ValueError) as err:
            log.error("kube-proxy: cannot list the node's addresses for NodePorts: %s", err)
            return []
        found = sorted({a["local"] for link in links if link.get("ifname") != self.interface
                        for a in link.get("addr_info") or () if a.get("local")
                        and any(ipaddress.ip_address(a["local"]) in n for n in nets)})
        if not found:
            log.warning("kube-proxy: no node address matches --nodeport-addresses %s: NodePorts listen nowhere",
                        ",".join(spec))
        return found

    def endpoints_for(self, rule: PortRule, client: str) -> list[Endpoint]:
        """The endpoints a connection from client may use ([]: it is dropped).

        Cluster policy: all of the Service's. Local policy: the endpoints on the client's node.
        Every node of this kubelet is this host, so a connection from the host itself (a
        local source address) or from outside counts as arriving at all of them: it may use
        the endpoints on any node of this kubelet; a pod's (its address in a node's podCIDR,
        upstream's --detect-local-mode=NodeCIDR) those on its own node. External
        destinations (NodePorts, externalIPs, load balancer IPs) short-circuit pods and the
        host to the Cluster policy, as upstream's EXT chain does ("pod traffic for ... external
        destinations", "route LOCAL traffic for ... external destinations"), and a load
        balancer IP takes only clients inside loadBalancerSourceRanges (upstream's FW chain).
        Upstream: syncProxyRules (pkg/proxy/iptables/proxier.go), CategorizeEndpoints.
        """
        if not rule.source_ranges and not rule.policy_local:
            return rule.endpoints            # the common case: nothing to look at
        try:
            addr = ipaddress.ip_address(client)
        except ValueError:
            return []
        if rule.source_ranges and not any(addr in n for n in rule.source_ranges):
            return []
        if not rule.policy_local:
            return rule.endpoints
        node = next((name for name, net in self.network.node_cidrs().items() if addr in net), "")
        if rule.external and (node or _is_local_address(client)):
            return rule.endpoints
        if node and not rule.external:
            return rule.local.get(node, [])
        return sorted(e for eps in rule.local.values() for e in eps)

    async def _sync_health_checks(self, want: dict[int, tuple[str, str, int]], addresses: list[str]) -> bool:
        """One HTTP server per healthCheckNodePort, on the NodePort addresses: 200 while the
        Service has endpoints on this kubelet's nodes, else 503, as upstream's. False if one
        could not listen."""
        ok = True
        for port in [p for p in self._health if p not in want]:
            self._health.pop(port).close()
        for port, (ns, name, count) in want.items():
            hc = self._health.get(port)
            if hc is None:
                hc = HealthCheck(ns, name)
                try:
                    await hc.start(addresses, port)
                except OSError as err:
                    log.error("kube-proxy: cannot serve the health check of %s/%s on port %s: %s", ns, name, port, err)
                    hc.close()
                    ok = False
                    continue
                self._health[port] = hc
            hc.namespace, hc.name, hc.endpoints = ns, name, count
        return ok

    async def close(self) -> None:
        for s in self._servers.values():
            s.close()
        for hc in self._health.values():
            hc.close()
        self._servers.clear()
        self._health.clear()
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
        candidates = self.endpoints_for(rule, str(peer[0]))
        if not candidates:                   # upstream DROPs it ("has no local endpoints"); accepted, we reset
            _reset(writer)
            return
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        for host, port in rule.pick(str(peer[0]), time.monotonic(), candidates):
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


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (SO_LINGER 0): the closest a userspace proxy comes to a DROP once
    the kernel has accepted the connection."""
    sock = writer.get_extra_info("socket")
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def _is_local_address(ip: str) -> bool:
    """Whether ip is an address of this host (upstream: `-m addrtype --src-type LOCAL`): the
    kernel lets a socket bind only to one of its own."""
    if ip.startswith("127."):
        return True
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind((ip, 0))
        except OSError:
            return False
    return True


def parse_node_port_addresses(value: str) -> tuple[str, ...]:
    """--nodeport-addresses: CIDRs, or the single word "primary" ("" or unset: all local
    addresses). Upstream: validateKubeProxyNodePortAddress
    (pkg/proxy/apis/config/validation/validation.go)."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    for i, v in enumerate(items):
        if v == "primary":
            if i != 0 or len(items) != 1:
                raise ValueError(f'nodePortAddresses[{i}]: Invalid value: "{v}": can\'t use both \'primary\' and CIDRs')
            break
        try:
            ipaddress.ip_network(v, strict=False)
            if "/" not in v:
                raise ValueError(v)
        except ValueError:
            raise ValueError(f'nodePortAddresses[{i}]: Invalid value: "{v}": must be a valid CIDR') from None
    return tuple(items)


class HealthCheck:
    """A LoadBalancer Service's healthCheckNodePort: any GET answers 200 while the Service has
    local endpoints, else 503, with upstream's JSON body and headers. Upstream: hcHandler.ServeHTTP
    (pkg/proxy/healthcheck/service_health.go)."""

    def __init__(self, namespace: str, name: str) -> None:
        self.namespace, self.name, self.endpoints = namespace, name, 0
        self.servers: list[asyncio.Server] = []

    async def start(self, addresses: list[str], port: int) -> None:
        for addr in addresses:
            self.servers.append(await asyncio.start_server(self._serve, addr, port, reuse_address=True))

    def close(self) -> None:
        for s in self.servers:
            s.close()

    def response(self) -> bytes:
        healthy = "true"
        body = ("{\n\t\"service\": {\n\t\t\"namespace\": %s,\n\t\t\"name\": %s\n\t},\n"
                "\t\"localEndpoints\": %d,\n\t\"serviceProxyHealthy\": %s\n}"
                % (json.dumps(self.namespace), json.dumps(self.name), self.endpoints, healthy)).encode()
        status = "200 OK" if self.endpoints else "503 Service Unavailable"
        return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\n"
                f"X-Load-Balancing-Endpoint-Weight: {self.endpoints}\r\nContent-Length: {len(body)}\r\n"
                f"Connection: close\r\n\r\n").encode() + body

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEALTH_CHECK_READ_TIMEOUT)
            writer.write(self.response())
            await writer.drain()
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()


class UDPProxy(asyncio.DatagramProtocol):
    """A UDP Service port: each client (address, port) gets a socket of its own connected to one
    endpoint, kept while it is used (UDP_IDLE_TIMEOUT), so replies find their way back.
    Upstream: userspace proxySocket's udpProxySocket (ProxyLoop, proxyClient)."""

    def __init__(self, rule: PortRule,
                 endpoints_for: Callable[[PortRule, str], list[Endpoint]] | None = None) -> None:
        self.rule = rule
        self.endpoints_for = endpoints_for      # the traffic policies (ServiceProxy.endpoints_for)
        self.transport: Any = None
        self.clients: dict[Any, _UDPClient] = {}

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: Any) -> None:
        c = self.clients.get(addr)
        if c is None:
            candidates = self.endpoints_for(self.rule, str(addr[0])) if self.endpoints_for else None
            order = self.rule.pick(str(addr[0]), time.monotonic(), candidates)
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
