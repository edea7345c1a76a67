"""Cluster DNS for pods in network namespaces: Services' names answered from the informers'
caches, other names forwarded to the host's resolver; and each pod's resolv.conf.

    server = ClusterDNS(services_lister, slices_lister)
    reply = server.answer(query_bytes)               # bytes, or None to drop a malformed query
    resolv_conf(pod, "10.96.0.10")                   # the pod's /etc/resolv.conf text, or None

Records (upstream's DNS specification for Kubernetes, as CoreDNS's kubernetes plugin serves it):
- `<svc>.<ns>.svc.cluster.local` A: the ClusterIP; a headless Service: its ready endpoints'
  addresses; an ExternalName Service: a CNAME to its externalName.
- `_<port>._<proto>.<svc>.<ns>.svc.cluster.local` SRV: priority 0, weight 100, the port, target
  `<svc>.<ns>.svc.cluster.local` (named ports only).
- `<a-b-c-d>.<ns>.pod.cluster.local` A: a.b.c.d (CoreDNS's `pods insecure`).
- An existing name asked for another type (AAAA, ...): NOERROR without answers; a name in the
  cluster domain that does not exist: NXDOMAIN. Both authoritative, TTL 30 s (kubeadm's Corefile).
- Anything outside the cluster domain goes to the first nameserver of the host's
  /etc/resolv.conf (SERVFAIL if there is none or it does not answer in 2 s).
The server listens on UDP and TCP port 53 of the cluster DNS address (kubeadm's clusterDNS,
10.96.0.10), made local by the kube-proxy (proxy.py) like a ClusterIP.

Why dnslib and not dnspython: both decode and encode the same messages (each parses the other's
answers) and both reject 3,000 fuzzed packets and a compression-pointer loop with an exception;
dnslib answers a query in 50-140 µs against dnspython's 210-310 µs (parse, build and encode
an A answer; benchmarks/podnet_dns.py, on a loaded machine) and imports in 16-34 ms against
50-130 ms, and it raises one error type (DNSError) for every malformed packet.

Upstream: CoreDNS plugin/kubernetes (and its forward plugin); pkg/kubelet/network/dns/dns.go
(GetPodDNS: dnsPolicy, dnsConfig, ndots:5) for resolv.conf.
"""
from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import pathlib
import struct
from typing import Any

log = logging.getLogger(__name__)

CLUSTER_DOMAIN = "cluster.local"
CLUSTER_DNS = "10.96.0.10"          # kubeadm's clusterDNS: the tenth address of 10.96.0.0/12
TTL = 30
FORWARD_TIMEOUT = 2.0
HOST_RESOLV_CONF = pathlib.Path("/etc/resolv.conf")
MAX_SEARCH = 32                     # upstream's MaxDNSSearchPaths
MAX_NAMESERVERS = 3                 # upstream's validation.MaxDNSNameservers


class ClusterDNS:
    def __init__(self, services: Any, slices: Any, *, domain: str = CLUSTER_DOMAIN,
                 upstream: str | None = None) -> None:
        from dnslib import DNSRecord         # noqa: F401  (fail here, once, if it is missing)
        self.services, self.slices, self.domain = services, slices, domain.strip(".").lower()
        self.upstream = upstream if upstream is not None else host_nameserver()
        self.upstream_port = 53

    # --- answering ---------------------------------------------------------------------------

    def answer(self, raw: bytes) -> bytes | None:
        """The reply to one query in the cluster domain, or None: not ours (forward it) or not
        a query at all (drop it)."""
        from dnslib import DNSError, DNSRecord
        try:
            q = DNSRecord.parse(raw)
        except (DNSError, ValueError, IndexError, struct.error):
            return None
        if q.header.qr or not q.questions:
            return None
        name = str(q.q.qname).rstrip(".").lower()
        if name != self.domain and not name.endswith("." + self.domain):
            return None
        reply = q.reply()                    # authoritative (aa) and recursion available
        found, records = self._lookup(name[: -len(self.domain)].rstrip("."), q.q.qtype)
        for rr in records:
            reply.add_answer(rr)
        if not found:
            reply.header.rcode = 3           # NXDOMAIN
        return bytes(reply.pack())

    def _lookup(self, rel: str, qtype: int) -> tuple[bool, list[Any]]:
        """(whether the name exists, its records of qtype) for rel, the name without the domain."""
        from dnslib import QTYPE
        labels = rel.split(".") if rel else []
        fqdn = ".".join([*labels, self.domain]) + "."
        if len(labels) == 3 and labels[2] == "svc":
            return self._service(labels[1], labels[0], fqdn, qtype)
        if len(labels) == 5 and labels[4] == "svc" and labels[0].startswith("_") and labels[1].startswith("_"):
            return self._srv(labels[3], labels[2], labels[0][1:], labels[1][1:], fqdn, qtype)
        if len(labels) == 3 and labels[2] == "pod":
            with contextlib.suppress(ValueError):
                ip = str(ipaddress.IPv4Address(labels[0].replace("-", ".")))
                return True, [_rr(fqdn, QTYPE.A, ip)] if qtype in (QTYPE.A, QTYPE.ANY) else []
            return False, []
        # The zone itself and the namespaces' parents exist (empty non-terminals).
        return (not labels or labels in (["svc"], ["pod"]) or (len(labels) == 2 and labels[1] in ("svc", "pod"))), []

    def _service(self, ns: str, name: str, fqdn: str, qtype: int) -> tuple[bool, list[Any]]:
        from dnslib import QTYPE
        svc = self._get(ns, name)
        if svc is None or svc.spec is None:
            return False, []
        spec = svc.spec
        if spec.type == "ExternalName" and spec.external_name:
            return True, [_rr(fqdn, QTYPE.CNAME, spec.external_name)] if qtype in (QTYPE.CNAME, QTYPE.A, QTYPE.ANY) else []
        if qtype not in (QTYPE.A, QTYPE.ANY):
            return True, []
        if spec.cluster_ip and spec.cluster_ip != "None":
            return True, [_rr(fqdn, QTYPE.A, spec.cluster_ip)]
        return True, [_rr(fqdn, QTYPE.A, ip) for ip in self._ready_addresses(ns, name)]

    def _srv(self, ns: str, name: str, port_name: str, proto: str, fqdn: str, qtype: int) -> tuple[bool, list[Any]]:
        from dnslib import QTYPE
        svc = self._get(ns, name)
        if svc is None or svc.spec is None:
            return False, []
        port = next((p for p in svc.spec.ports or () if p.name == port_name
                     and (p.protocol or "TCP").lower() == proto), None)
        if port is None:
            return False, []
        if qtype not in (QTYPE.SRV, QTYPE.ANY):
            return True, []
        target = f"{name}.{ns}.svc.{self.domain}."
        return True, [_rr(fqdn, QTYPE.SRV, (0, 100, port.port, target))]

    def _get(self, ns: str, name: str) -> Any:
        try:
            return self.services.namespace(ns).get(name)
        except Exception:                    # NotFound
            return None

    def _ready_addresses(self, ns: str, name: str) -> list[str]:
        out: set[str] = set()
        for s in self.slices.namespace(ns).list():
            if (s.metadata.labels or {}).get("kubernetes.io/service-name") != name or s.address_type != "IPv4":
                continue
            for e in s.endpoints or ():
                if e.conditions is None or e.conditions.ready is not False:
                    out.update(e.addresses or ())
        return sorted(out)

    # --- forwarding --------------------------------------------------------------------------

    async def forward(self, raw: bytes) -> bytes:
        """Ask the host's nameserver (UDP); SERVFAIL if there is none or it does not answer."""
        if self.upstream:
            loop = asyncio.get_running_loop()
            done: asyncio.Future[bytes] = loop.create_future()
            try:
                transport, _ = await loop.create_datagram_endpoint(
                    lambda: _OneReply(done), remote_addr=(self.upstream, self.upstream_port))
            except OSError:
                return _servfail(raw)
            try:
                transport.sendto(raw)
                return await asyncio.wait_for(done, FORWARD_TIMEOUT)
            except (asyncio.TimeoutError, OSError):
                pass
            finally:
                transport.close()
        return _servfail(raw)

    async def reply(self, raw: bytes) -> bytes | None:
        own = self.answer(raw)
        if own is not None:
            return own
        if len(raw) < 12 or raw[2] & 0x80:       # too short to be a query, or a response
            return None
        return await self.forward(raw)

    # --- serving -----------------------------------------------------------------------------

    async def serve(self, address: str, port: int = 53) -> list[Any]:
        """Listen on UDP and TCP address:port; the transports and servers to close."""
        loop = asyncio.get_running_loop()
        udp, _ = await loop.create_datagram_endpoint(lambda: _UDP(self), local_addr=(address, port))
        tcp = await asyncio.start_server(self._tcp, address, port, reuse_address=True)
        return [udp, tcp]

    async def _tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """DNS over TCP: each message prefixed by its 2-byte length (RFC 1035 4.2.2)."""
        try:
            while True:
                size = struct.unpack("!H", await asyncio.wait_for(reader.readexactly(2), 30))[0]
                out = await self.reply(await asyncio.wait_for(reader.readexactly(size), 30))
                if out is None:
                    break
                writer.write(struct.pack("!H", len(out)) + out)
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.TimeoutError, OSError):
            pass
        finally:
            writer.close()


class _UDP(asyncio.DatagramProtocol):
    def __init__(self, dns: ClusterDNS) -> None:
        self.dns = dns
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: Any) -> None:
        own = self.dns.answer(data)
        if own is not None:
            self.transport.sendto(own, addr)
        elif len(data) >= 12 and not data[2] & 0x80:
            task = asyncio.ensure_future(self.dns.forward(data))
            task.add_done_callback(lambda t: t.cancelled() or t.exception() or self.transport.sendto(t.result(), addr))


class _OneReply(asyncio.DatagramProtocol):
    def __init__(self, done: asyncio.Future[bytes]) -> None:
        self.done = done

    def datagram_received(self, data: bytes, addr: Any) -> None:
        if not self.done.done():
            self.done.set_result(data)

    def error_received(self, exc: Exception) -> None:
        if not self.done.done():
            self.done.set_exception(exc)


def _rr(name: str, qtype: int, value: Any) -> Any:
    from dnslib import QTYPE, RR, SRV, A, CNAME
    if qtype == QTYPE.A:
        rdata: Any = A(value)
    elif qtype == QTYPE.CNAME:
        rdata = CNAME(value.rstrip(".") + ".")
    else:
        priority, weight, port, target = value
        rdata = SRV(priority, weight, port, target)
    return RR(name, qtype, rdata=rdata, ttl=TTL)


def _servfail(raw: bytes) -> bytes:
    """SERVFAIL for a query, echoing its id and question."""
    q = _question(raw)
    return raw[:2] + bytes([0x80 | (raw[2] & 0x79), 0x82]) + (b"\0\1" if q else b"\0\0") + b"\0" * 6 + q


def _question(raw: bytes) -> bytes:
    """The first question's bytes (name, type, class), or b"" if it cannot be found."""
    i = 12
    while i < len(raw) and raw[i]:
        if raw[i] & 0xC0:
            return b""
        i += raw[i] + 1
    return raw[12:i + 5] if i + 5 <= len(raw) and raw[5] else b""


def host_nameserver(path: pathlib.Path = HOST_RESOLV_CONF) -> str:
    """The first nameserver of the host's resolv.conf that is not a loopback address (a pod
    cannot reach the host's 127.0.0.53), or ""."""
    for server in parse_resolv_conf(_read(path))[0]:
        with contextlib.suppress(ValueError):
            if not ipaddress.ip_address(server).is_loopback:
                return server
    return ""


def parse_resolv_conf(text: str) -> tuple[list[str], list[str], list[str]]:
    """(nameservers, search domains, options) of a resolv.conf."""
    servers: list[str] = []
    search: list[str] = []
    options: list[str] = []
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split(";", 1)[0].split()
        if not fields:
            continue
        if fields[0] == "nameserver" and len(fields) > 1:
            servers.append(fields[1])
        elif fields[0] in ("search", "domain"):
            search = fields[1:]              # the last one wins, as in the resolver
        elif fields[0] == "options":
            options += fields[1:]
    return servers, search, options


def resolv_conf(pod: Any, cluster_dns: str = CLUSTER_DNS, *, domain: str = CLUSTER_DOMAIN,
                host: pathlib.Path = HOST_RESOLV_CONF) -> str:
    """The pod's resolv.conf as the kubelet writes it. Upstream: Configurer.GetPodDNS (dns.go):
    ClusterFirst (the default) -> the cluster DNS with `<ns>.svc.<domain> svc.<domain> <domain>`
    before the host's search domains and ndots:5; a hostNetwork pod with ClusterFirst -> Default;
    ClusterFirstWithHostNet -> ClusterFirst; Default -> the host's; None -> dnsConfig alone;
    dnsConfig's nameservers, searches and options are then merged in."""
    spec = pod.spec
    policy = (spec.dns_policy if spec else None) or "ClusterFirst"
    if policy == "ClusterFirst" and spec is not None and spec.host_network:
        policy = "Default"
    host_servers, host_search, host_options = parse_resolv_conf(_read(host))
    if policy == "None":
        servers, search, options = [], [], []
    elif policy == "Default":
        servers, search, options = host_servers, host_search, host_options
    else:
        ns = pod.metadata.namespace or "default"
        servers = [cluster_dns]
        search = [f"{ns}.svc.{domain}", f"svc.{domain}", domain, *host_search]
        options = ["ndots:5"]
    cfg = spec.dns_config if spec is not None else None
    if cfg is not None:
        servers = servers + [s for s in cfg.nameservers or () if s not in servers]
        search = search + [s for s in cfg.searches or () if s not in search]
        opts = {o.split(":", 1)[0]: o for o in options}
        for o in cfg.options or ():
            opts[o.name or ""] = f"{o.name}:{o.value}" if o.value is not None else (o.name or "")
        options = list(opts.values())
    lines = [f"nameserver {s}" for s in servers[:MAX_NAMESERVERS]]
    if search:
        lines.append("search " + " ".join(dict.fromkeys(search[:MAX_SEARCH])))
    if options:
        lines.append("options " + " ".join(options))
    return "\n".join(lines) + "\n"


def _read(path: pathlib.Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
