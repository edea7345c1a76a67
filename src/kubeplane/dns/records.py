"""The cluster zone's records, as CoreDNS's `kubernetes` plugin answers them.

The contract is the Kubernetes DNS-Based Service Discovery specification (kubernetes/dns
docs/specification.md) as CoreDNS implements it with kubeadm's Corefile
(`kubernetes cluster.local in-addr.arpa ip6.arpa { pods insecure; fallthrough in-addr.arpa
ip6.arpa; ttl 30 }`, here with the plugin's default TTL of 5 s):

    <svc>.<ns>.svc.<zone>                 A/AAAA: the ClusterIPs; headless: the ready endpoints
    <hostname>.<svc>.<ns>.svc.<zone>      A/AAAA: an endpoint (its hostname, or its dashed IP)
    _<port>._<proto>.<svc>.<ns>.svc.<zone> SRV 0 <weight> <port> <target> (+ the targets' A/AAAA)
    <svc>.<ns>.svc.<zone> (ExternalName)  CNAME <externalName>
    a-b-c-d.<ns>.pod.<zone>               A a.b.c.d (pods insecure: not checked against pods)
    dns-version.<zone>                    TXT "1.1.0";  <zone> SOA/NS;  ns.dns.<zone> A
    d.c.b.a.in-addr.arpa                  PTR of a ClusterIP or an endpoint address

A name the zone does not hold is NXDOMAIN, a name that exists without the asked type is NODATA
(NOERROR, no answer); both carry the zone's SOA in the authority section.

What it reads comes from informers (Services, EndpointSlices, Namespaces): every query is a few
dict look-ups, never a list of the storage. The maps below are kept by the informers' event
handlers; `generation` counts changes (the SOA serial, and the key of the server's response
cache).

Upstream: coredns plugin/kubernetes (kubernetes.go Records/findServices/findPods, parse.go
parseRequest, handler.go ServeDNS, xfr.go), plugin/backend_lookup.go (A, SRV, CNAME, TXT, SOA).
"""
from __future__ import annotations

import ipaddress
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.reversename
import dns.rrset
from dns.rdtypes.ANY.CNAME import CNAME
from dns.rdtypes.ANY.NS import NS
from dns.rdtypes.ANY.PTR import PTR
from dns.rdtypes.ANY.SOA import SOA
from dns.rdtypes.ANY.TXT import TXT
from dns.rdtypes.IN.A import A
from dns.rdtypes.IN.AAAA import AAAA
from dns.rdtypes.IN.SRV import SRV

log = logging.getLogger(__name__)

IN = dns.rdataclass.IN
T_A, T_AAAA, T_CNAME, T_SRV = dns.rdatatype.A, dns.rdatatype.AAAA, dns.rdatatype.CNAME, dns.rdatatype.SRV
T_TXT, T_PTR, T_NS, T_SOA = dns.rdatatype.TXT, dns.rdatatype.PTR, dns.rdatatype.NS, dns.rdatatype.SOA

DEFAULT_TTL = 5                   # Upstream: defaultTTL (kubernetes/setup.go): "The default (and minimum) is 5"
DNS_SCHEMA_VERSION = "1.1.0"      # Upstream: DNSSchemaVersion (kubernetes.go)
SVC, POD = "svc", "pod"
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
PODS_DISABLED, PODS_INSECURE = "disabled", "insecure"
DEFAULT_ZONE = dns.name.from_text("cluster.local.")
REVERSE_ZONES = (dns.name.from_text("in-addr.arpa."), dns.name.from_text("ip6.arpa."))


class NameError_(Exception):
    """The zone does not hold the name: NXDOMAIN (errNoItems, errNsNotExposed, errInvalidRequest)."""


@dataclass
class Request:
    """A query name split into the spec's parts. Upstream: recordRequest (parse.go)"""
    port: str = ""
    protocol: str = ""
    endpoint: str = ""
    service: str = ""
    namespace: str = ""
    pod_or_svc: str = ""


def parse_request(labels: list[str]) -> Request:
    """labels: the query name below the zone, left to right, lower-cased.

    `_port._proto.svc.ns.svc`, `endpoint.svc.ns.svc`, `svc.ns.svc`, `ns.svc`, `svc`; anything
    longer, or not ending in svc/pod, is invalid (NXDOMAIN). Upstream: parseRequest (parse.go)"""
    r = Request()
    if not labels:
        return r
    segs = list(labels)
    r.pod_or_svc = segs.pop()
    if r.pod_or_svc not in (SVC, POD):
        raise NameError_()
    if segs:
        r.namespace = segs.pop()
    if segs:
        r.service = segs.pop()
    if len(segs) == 1:
        r.endpoint = segs[0]
    elif len(segs) == 2:
        r.port, r.protocol = segs[0].removeprefix("_"), segs[1].removeprefix("_")
    elif segs:
        raise NameError_()
    return r


@dataclass
class Record:
    """One answer before it becomes an RR: an address or a CNAME target, a port (-1: none), and
    the name SRV points to. Upstream: msg.Service"""
    host: str
    port: int
    target: tuple[str, ...]          # labels below the zone: ("web", "default", "svc")

    def host_type(self) -> int:
        try:
            return T_A if ipaddress.ip_address(self.host).version == 4 else T_AAAA
        except ValueError:
            return T_CNAME


def endpoint_hostname(hostname: str | None, address: str) -> str:
    """An endpoint's name label: its hostname, else its address with dashes.
    Upstream: endpointHostname (kubernetes.go)"""
    if hostname:
        return hostname
    if ":" in address:
        return address.replace(":", "-")
    return address.replace(".", "-")


def _valid_name(host: str) -> bool:
    """A name a CNAME can carry (an ExternalName stored before validation, or by another server)."""
    try:
        dns.name.from_text(host)
    except Exception:
        return False
    return True


def _match_port_and_protocol(a_port: str, b_port: str | None, a_proto: str, b_proto: str | None) -> bool:
    """Upstream: matchPortAndProtocol (kubernetes.go)"""
    return (not a_port or a_port == (b_port or "").lower()) and (not a_proto or a_proto == (b_proto or "").lower())


@dataclass
class ClusterZone:
    """The zone's data (kept by informer handlers) and its answers.

    services: (ns, name) -> Service; slices: (ns, service) -> {slice name: EndpointSlice};
    namespaces: the names of the namespaces that exist.
    """
    zone: dns.name.Name = DEFAULT_ZONE
    ttl: int = DEFAULT_TTL
    pods: str = PODS_INSECURE
    dns_ips: tuple[str, ...] = ()                   # the kube-dns ClusterIP(s): ns.dns.<zone>
    services: dict[tuple[str, str], Any] = field(default_factory=dict)
    slices: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    namespaces: set[str] = field(default_factory=set)
    generation: int = 0
    serial: int = field(default_factory=lambda: int(time.time()))
    synced: Callable[[], bool] = lambda: True
    now: Callable[[], float] = time.time
    _reverse: tuple[int, dict[str, list[tuple[str, ...]]]] | None = None

    # --- informer handlers ---------------------------------------------------------------

    def changed(self) -> None:
        self.generation += 1
        self.serial = int(self.now())     # Upstream: dnsControl.Modified, the SOA serial

    def set_service(self, svc: Any) -> None:
        m = svc.metadata
        self.services[(m.namespace or "", m.name or "")] = svc
        self.changed()

    def delete_service(self, svc: Any) -> None:
        svc = getattr(svc, "obj", svc)         # a DeletedFinalStateUnknown
        m = svc.metadata
        self.services.pop((m.namespace or "", m.name or ""), None)
        self.changed()

    def set_slice(self, es: Any) -> None:
        m = es.metadata
        owner = (m.labels or {}).get(LABEL_SERVICE_NAME)
        if owner:
            self.slices.setdefault((m.namespace or "", owner), {})[m.name or ""] = es
            self.changed()

    def update_slice(self, old: Any, new: Any) -> None:
        """A slice whose service-name label changed moves to its new Service."""
        if (old.metadata.labels or {}).get(LABEL_SERVICE_NAME) != (new.metadata.labels or {}).get(LABEL_SERVICE_NAME):
            self.delete_slice(old)
        self.set_slice(new)

    def delete_slice(self, es: Any) -> None:
        es = getattr(es, "obj", es)
        m = es.metadata
        key = (m.namespace or "", (m.labels or {}).get(LABEL_SERVICE_NAME, ""))
        by_name = self.slices.get(key)
        if by_name is not None:
            by_name.pop(m.name or "", None)
            if not by_name:
                del self.slices[key]
            self.changed()

    def set_namespace(self, ns: Any) -> None:
        self.namespaces.add(ns.metadata.name or "")
        self.changed()

    def delete_namespace(self, ns: Any) -> None:
        ns = getattr(ns, "obj", ns)
        self.namespaces.discard(ns.metadata.name or "")
        self.changed()

    # --- lookups ------------------------------------------------------------------------

    def namespace_exposed(self, ns: str) -> bool:
        return ns in self.namespaces

    def ready_endpoints(self, ns: str, name: str) -> list[tuple[str, str | None, list[Any]]]:
        """(address, hostname, ports) of every ready endpoint in the Service's slices (the
        EndpointSlice controller marks endpoints ready for publishNotReadyAddresses).
        Upstream: EndpointSliceToEndpoints (object/endpoint.go) keeps Ready == nil or true."""
        out = []
        for es in (self.slices.get((ns, name)) or {}).values():
            ports = es.ports or [None]         # no ports: one sentinel, port -1
            for ep in es.endpoints or ():
                cond = ep.conditions
                if cond is not None and cond.ready is False:
                    continue
                for addr in ep.addresses or ():
                    out.append((addr, ep.hostname, ports))
        return out

    def find_services(self, r: Request) -> list[Record]:
        """Upstream: findServices (kubernetes.go)"""
        if not self.namespace_exposed(r.namespace):
            raise NameError_()
        if not r.service:
            return []                          # the namespace exists: NODATA
        svc = self.services.get((r.namespace, r.service))
        if svc is None:
            raise NameError_()
        spec = svc.spec
        found: list[Record] = []
        base = (r.service, r.namespace, SVC)
        if spec.type == "ExternalName":
            if r.endpoint or r.port or r.protocol:
                raise NameError_()
            rec = Record((spec.external_name or "").rstrip("."), 0, base)
            if rec.host_type() == T_CNAME and rec.host and _valid_name(rec.host):
                return [rec]
            raise NameError_()
        if spec.cluster_ip == "None" or r.endpoint:       # headless, or an endpoint's name
            for addr, hostname, ports in self.ready_endpoints(r.namespace, r.service):
                label = endpoint_hostname(hostname, addr)
                if r.endpoint and r.endpoint != label.lower():
                    continue
                for p in ports:
                    if p is not None and not _match_port_and_protocol(r.port, p.name, r.protocol, p.protocol):
                        continue
                    if p is None and (r.port or r.protocol):
                        continue
                    found.append(Record(addr, p.port if p is not None and p.port is not None else -1,
                                        (label, *base)))
        else:
            for p in spec.ports or ():
                if not _match_port_and_protocol(r.port, p.name, r.protocol, p.protocol):
                    continue
                for ip in spec.cluster_ips or ([spec.cluster_ip] if spec.cluster_ip else []):
                    found.append(Record(ip, p.port or 0, base))
        if not found:
            raise NameError_()
        return found

    def find_pods(self, r: Request) -> list[Record]:
        """`a-b-c-d.<ns>.pod`: the address itself, unchecked (pods insecure).
        Upstream: findPods (kubernetes.go)"""
        if self.pods == PODS_DISABLED or not self.namespace_exposed(r.namespace):
            raise NameError_()
        if not r.service:
            return []
        name = r.service
        ip = name.replace("-", ".") if name.count("-") == 3 and "--" not in name else name.replace("-", ":")
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            raise NameError_() from None
        return [Record(ip, 0, (name, r.namespace, POD))]

    def records(self, labels: list[str]) -> list[Record]:
        """Upstream: Kubernetes.Records (kubernetes.go)"""
        r = parse_request(labels)
        if not r.pod_or_svc:
            return []                           # <zone>, svc.<zone>, pod.<zone>: NODATA
        if not r.namespace:
            return []
        if r.pod_or_svc == POD:
            return self.find_pods(r)
        return self.find_services(r)

    # --- answers --------------------------------------------------------------------------

    def name(self, labels: tuple[str, ...]) -> dns.name.Name:
        return dns.name.Name([lb.encode() for lb in labels] + list(self.zone.labels))

    def soa(self) -> dns.rrset.RRset:
        """Upstream: plugin.SOA (backend_lookup.go): ns.dns.<zone>, hostmaster.<zone>, refresh
        7200, retry 1800, expire 86400, minimum the TTL."""
        rr = dns.rrset.RRset(self.zone, IN, T_SOA)
        rr.update_ttl(min(self.ttl, 300))
        rr.add(SOA(IN, T_SOA, self.name(("ns", "dns")), self.name(("hostmaster",)),
                   self.serial & 0xFFFFFFFF, 7200, 1800, 86400, self.ttl))
        return rr

    def answer(self, qname: dns.name.Name, qtype: int) -> tuple[int, list[dns.rrset.RRset], list[dns.rrset.RRset]]:
        """(rcode, answer, additional) for a name in the zone; the caller adds the SOA when the
        answer is empty. Upstream: Kubernetes.ServeDNS (handler.go)"""
        labels = [lb.decode("latin-1").lower() for lb in qname.relativize(self.zone).labels]
        if labels == ["@"] or not labels:
            labels = []
        try:
            if qtype == T_SOA:
                return (dns.rcode.NOERROR, [self.soa()] if not labels else [], [])
            if qtype == T_NS and not labels:
                return dns.rcode.NOERROR, *self._ns(qname)
            if labels == ["ns", "dns"]:
                return dns.rcode.NOERROR, self._default_ns(qname, qtype), []
            if qtype == T_TXT:
                return dns.rcode.NOERROR, self._txt(qname, labels), []
            return dns.rcode.NOERROR, *self._lookup(qname, qtype, labels)
        except NameError_:
            if not self.synced():
                return dns.rcode.SERVFAIL, [], []
            return dns.rcode.NXDOMAIN, [], []

    def _lookup(self, qname: dns.name.Name, qtype: int,
                labels: list[str]) -> tuple[list[dns.rrset.RRset], list[dns.rrset.RRset]]:
        recs = self.records(labels)
        if qtype in (T_A, T_AAAA):
            return self._address(qname, qtype, recs), []
        if qtype == T_SRV:
            return self._srv(qname, [r for r in recs if r.host_type() != T_CNAME])
        if qtype == T_CNAME:
            cnames = [r for r in recs if r.host_type() == T_CNAME]
            return ([self._rrset(qname, T_CNAME, [CNAME(IN, T_CNAME, dns.name.from_text(cnames[0].host))])]
                    if cnames else []), []
        return [], []                                  # other types: NODATA (the name exists)

    def _rrset(self, name: dns.name.Name, rdtype: Any, rdatas: list[Any], ttl: int | None = None) -> dns.rrset.RRset:
        rr = dns.rrset.RRset(name, IN, rdtype)
        rr.update_ttl(self.ttl if ttl is None else ttl)
        for rd in rdatas:
            rr.add(rd)
        return rr

    def _address(self, qname: dns.name.Name, qtype: int, recs: list[Record], depth: int = 0) -> list[dns.rrset.RRset]:
        """A/AAAA records, deduplicated; a CNAME inside the zone is followed (up to 8 deep),
        one outside is answered as the CNAME alone (the server resolves its target).
        Upstream: plugin.A / plugin.AAAA (backend_lookup.go)"""
        out: list[dns.rrset.RRset] = []
        seen: set[str] = set()
        rdatas: list[Any] = []
        for rec in recs:
            what = rec.host_type()
            if what == T_CNAME:
                target = dns.name.from_text(rec.host)
                if target == qname or depth > 7:
                    continue
                out.append(self._rrset(qname, T_CNAME, [CNAME(IN, T_CNAME, target)]))
                if target.is_subdomain(self.zone):
                    try:
                        out += self._address(target, qtype, self.records(
                            [lb.decode("latin-1").lower() for lb in target.relativize(self.zone).labels]), depth + 1)
                    except NameError_:
                        pass
                continue
            if what != qtype or rec.host in seen:
                continue
            seen.add(rec.host)
            rdatas.append(A(IN, T_A, rec.host) if what == T_A else AAAA(IN, T_AAAA, rec.host))
        if rdatas:
            out.insert(0, self._rrset(qname, qtype, rdatas))
        return out

    def _srv(self, qname: dns.name.Name, recs: list[Record]) -> tuple[list[dns.rrset.RRset], list[dns.rrset.RRset]]:
        """SRV 0 <weight> <port> <target>, the weight 100 split evenly over the records (at
        least 1), each target's address in the additional section.
        Upstream: plugin.SRV (backend_lookup.go)"""
        if not recs:
            return [], []
        weight = max(1, math.floor(100.0 / (100 * len(recs)) * 100))
        srvs: list[Any] = []
        extra: list[dns.rrset.RRset] = []
        seen_srv: set[tuple[tuple[str, ...], int]] = set()
        seen_addr: set[tuple[tuple[str, ...], str]] = set()
        for rec in recs:
            if rec.port == -1:
                continue
            target = self.name(rec.target)
            if (rec.target, rec.port) not in seen_srv:
                seen_srv.add((rec.target, rec.port))
                srvs.append(SRV(IN, T_SRV, 0, weight, rec.port, target))
            if (rec.target, rec.host) not in seen_addr:
                seen_addr.add((rec.target, rec.host))
                what = rec.host_type()
                extra.append(self._rrset(target, what, [A(IN, T_A, rec.host) if what == T_A else AAAA(IN, T_AAAA, rec.host)]))
        return ([self._rrset(qname, T_SRV, srvs)] if srvs else []), extra

    def _txt(self, qname: dns.name.Name, labels: list[str]) -> list[dns.rrset.RRset]:
        """Only dns-version.<zone> has a TXT record; another existing name is NODATA.
        Upstream: Kubernetes.Services, case dns.TypeTXT (kubernetes.go)"""
        if labels == ["dns-version"]:
            return [self._rrset(qname, T_TXT, [TXT(IN, T_TXT, [DNS_SCHEMA_VERSION.encode()])], ttl=28800)]
        if not self.records(labels):
            raise NameError_()
        return []

    def _ns(self, qname: dns.name.Name) -> tuple[list[dns.rrset.RRset], list[dns.rrset.RRset]]:
        ns_name = self.name(("ns", "dns"))
        return [self._rrset(qname, T_NS, [NS(IN, T_NS, ns_name)])], self._default_ns(ns_name, T_A)

    def _default_ns(self, qname: dns.name.Name, qtype: int) -> list[dns.rrset.RRset]:
        """ns.dns.<zone>: the kube-dns Service's address. Upstream: isDefaultNS, nsAddrs (ns.go)"""
        ips = [ip for ip in self.dns_ips if (":" in ip) == (qtype == T_AAAA)]
        if qtype not in (T_A, T_AAAA) or not ips:
            return []
        return [self._rrset(qname, qtype, [A(IN, T_A, ip) if qtype == T_A else AAAA(IN, T_AAAA, ip) for ip in ips])]

    # --- reverse --------------------------------------------------------------------------

    def reverse(self, qname: dns.name.Name) -> list[dns.rrset.RRset] | None:
        """PTR of a ClusterIP (<svc>.<ns>.svc.<zone>) or an endpoint address
        (<hostname>.<svc>.<ns>.svc.<zone>); None: not ours (the server forwards it, as kubeadm's
        `fallthrough in-addr.arpa ip6.arpa`). Upstream: Kubernetes.Reverse, serviceRecordForIP
        (reverse.go)"""
        try:
            ip = str(dns.reversename.to_address(qname))
        except Exception:
            return None
        targets = self._reverse_index().get(ip)
        if not targets:
            return None
        return [self._rrset(qname, T_PTR, [PTR(IN, T_PTR, self.name(t)) for t in targets])]

    def _reverse_index(self) -> dict[str, list[tuple[str, ...]]]:
        """address -> the names PTR answers: ClusterIPs first, then the endpoints' addresses
        that are no ClusterIP. Built on the first PTR query after a change (one pass over the
        zone's data), so a flood of PTR queries costs a dict look-up each."""
        if self._reverse is not None and self._reverse[0] == self.generation:
            return self._reverse[1]
        index: dict[str, list[tuple[str, ...]]] = {}
        for (ns, name), svc in self.services.items():
            spec = svc.spec
            for ip in (spec.cluster_ips or ([spec.cluster_ip] if spec.cluster_ip else [])) if spec else ():
                if ip != "None":
                    index.setdefault(ip, []).append((name, ns, SVC))
        endpoints: dict[str, list[tuple[str, ...]]] = {}
        for (ns, name) in self.slices:
            for addr, hostname, _ in self.ready_endpoints(ns, name):
                if addr not in index:
                    names = endpoints.setdefault(addr, [])
                    target = (endpoint_hostname(hostname, addr), name, ns, SVC)
                    if target not in names:
                        names.append(target)
        index.update(endpoints)
        self._reverse = (self.generation, index)
        return index
