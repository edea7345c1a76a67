"""The process runtime's cluster DNS (kubelet/network/dns.py): answers from Services and
EndpointSlices, forwarding, malformed queries, and the pods' resolv.conf. Needs dnslib."""
from __future__ import annotations

import asyncio
import pathlib
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.api.types import core_v1, discovery_v1, from_dict

dnslib = pytest.importorskip("dnslib", reason="dnslib is not installed (pip install dnslib)")

from kubeplane.kubelet.network.dns import ClusterDNS, _servfail, parse_resolv_conf, resolv_conf  # noqa: E402


class _NS:
    def __init__(self, items: list[Any], ns: str) -> None:
        self.items = [i for i in items if i.metadata.namespace == ns]

    def get(self, name: str) -> Any:
        for i in self.items:
            if i.metadata.name == name:
                return i
        raise errors.NotFound("", "services", name)

    def list(self) -> list[Any]:
        return self.items


class Lister:
    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def namespace(self, ns: str) -> _NS:
        return _NS(self.items, ns)


def svc(name: str, spec: dict[str, Any], ns: str = "default") -> core_v1.Service:
    return from_dict({"metadata": {"name": name, "namespace": ns}, "spec": spec}, core_v1.Service)


SERVICES = [svc("web", {"clusterIP": "10.96.0.20", "ports": [{"name": "http", "port": 80}]}),
            svc("db", {"clusterIP": "None", "ports": [{"name": "pg", "port": 5432}]}, ns="data"),
            svc("ext", {"type": "ExternalName", "externalName": "example.com"})]
SLICES = [from_dict({"metadata": {"name": "db-1", "namespace": "data", "labels": {"kubernetes.io/service-name": "db"}},
                     "addressType": "IPv4", "ports": [{"name": "pg", "port": 5432}],
                     "endpoints": [{"addresses": ["10.244.0.5"], "conditions": {"ready": True}},
                                   {"addresses": ["10.244.0.6"], "conditions": {"ready": False}},
                                   {"addresses": ["10.244.0.4"]}]}, discovery_v1.EndpointSlice)]


@pytest.fixture
def dns() -> ClusterDNS:
    return ClusterDNS(Lister(SERVICES), Lister(SLICES), upstream="")


def ask(dns: ClusterDNS, name: str, qtype: str = "A") -> Any:
    raw = dns.answer(bytes(dnslib.DNSRecord.question(name, qtype).pack()))
    assert raw is not None
    return dnslib.DNSRecord.parse(raw)


def answers(r: Any) -> list[str]:
    return [str(rr.rdata) for rr in r.rr]


def test_service_records(dns: ClusterDNS) -> None:
    r = ask(dns, "web.default.svc.cluster.local")
    assert (r.header.rcode, r.header.aa, answers(r), r.rr[0].ttl) == (0, 1, ["10.96.0.20"], 30)
    assert answers(ask(dns, "WEB.Default.svc.cluster.local.")) == ["10.96.0.20"]       # case-insensitive
    assert answers(ask(dns, "db.data.svc.cluster.local")) == ["10.244.0.4", "10.244.0.5"]   # headless: ready ones
    assert answers(ask(dns, "ext.default.svc.cluster.local")) == ["example.com."]       # a CNAME
    srv = ask(dns, "_http._tcp.web.default.svc.cluster.local", "SRV")
    assert answers(srv) == ["0 100 80 web.default.svc.cluster.local."]
    assert answers(ask(dns, "10-244-0-9.default.pod.cluster.local")) == ["10.244.0.9"]


def test_missing_names_and_other_types(dns: ClusterDNS) -> None:
    aaaa = ask(dns, "web.default.svc.cluster.local", "AAAA")
    assert (aaaa.header.rcode, answers(aaaa)) == (0, [])                  # exists: NOERROR, no answer
    for name, qtype in [("nope.default.svc.cluster.local", "A"), ("web.other.svc.cluster.local", "A"),
                        ("_nope._tcp.web.default.svc.cluster.local", "SRV"), ("x.y.cluster.local", "A"),
                        ("not-an-ip.default.pod.cluster.local", "A")]:
        assert ask(dns, name, qtype).header.rcode == 3, name            # NXDOMAIN
    assert ask(dns, "default.svc.cluster.local").header.rcode == 0       # an empty non-terminal


def test_not_ours_or_not_a_query(dns: ClusterDNS) -> None:
    assert dns.answer(bytes(dnslib.DNSRecord.question("example.com").pack())) is None     # forwarded
    assert dns.answer(b"\x00garbage") is None
    assert dns.answer(bytes(dnslib.DNSRecord.question("web.default.svc.cluster.local").reply().pack())) is None
    loop = bytes.fromhex("abcd01000001000000000000") + b"\xc0\x0c\x00\x01\x00\x01"   # a name pointing at itself
    assert dns.answer(loop) is None


async def test_forwarding_and_servfail(dns: ClusterDNS) -> None:
    query = bytes(dnslib.DNSRecord.question("example.com").pack())
    r = dnslib.DNSRecord.parse(await dns.forward(query))                  # no upstream: SERVFAIL
    assert (r.header.rcode, r.header.id, str(r.q.qname)) == (2, dnslib.DNSRecord.parse(query).header.id, "example.com.")
    assert dnslib.DNSRecord.parse(_servfail(query[:12])).header.rcode == 2

    class Upstream(asyncio.DatagramProtocol):
        def connection_made(self, transport: Any) -> None:
            self.transport = transport

        def datagram_received(self, data: bytes, addr: Any) -> None:
            a = dnslib.DNSRecord.parse(data).reply()
            a.add_answer(dnslib.RR("example.com", rdata=dnslib.A("192.0.2.7")))
            self.transport.sendto(bytes(a.pack()), addr)
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(Upstream, local_addr=("127.0.0.1", 0))
    try:
        dns.upstream, dns.upstream_port = "127.0.0.1", transport.get_extra_info("sockname")[1]
        assert answers(dnslib.DNSRecord.parse(await dns.reply(query))) == ["192.0.2.7"]
    finally:
        transport.close()


async def test_served_over_udp_and_tcp(dns: ClusterDNS) -> None:
    servers = await dns.serve("127.0.0.1", 0)
    try:
        udp_port = servers[0].get_extra_info("sockname")[1]
        tcp_port = servers[1].sockets[0].getsockname()[1]
        q = dnslib.DNSRecord.question("web.default.svc.cluster.local")
        loop = asyncio.get_running_loop()
        udp = await loop.run_in_executor(None, lambda: q.send("127.0.0.1", udp_port, timeout=2))
        assert answers(dnslib.DNSRecord.parse(udp)) == ["10.96.0.20"]
        tcp = await loop.run_in_executor(None, lambda: q.send("127.0.0.1", tcp_port, tcp=True, timeout=2))
        assert answers(dnslib.DNSRecord.parse(tcp)) == ["10.96.0.20"]
    finally:
        for s in servers:
            s.close()


def pod(spec: dict[str, Any], ns: str = "team") -> core_v1.Pod:
    return from_dict({"metadata": {"name": "p", "namespace": ns}, "spec": {"containers": [], **spec}}, core_v1.Pod)


def test_resolv_conf_follows_dns_policy_and_dns_config(tmp_path: pathlib.Path) -> None:
    host = tmp_path / "resolv.conf"
    host.write_text("# host\nnameserver 192.0.2.53\nnameserver 127.0.0.53\nsearch corp.example\noptions edns0\n")
    assert parse_resolv_conf(host.read_text()) == (["192.0.2.53", "127.0.0.53"], ["corp.example"], ["edns0"])
    first = resolv_conf(pod({}), host=host)
    assert first == ("nameserver 10.96.0.10\n"
                     "search team.svc.cluster.local svc.cluster.local cluster.local corp.example\n"
                     "options ndots:5\n")
    assert resolv_conf(pod({"hostNetwork": True}), host=host) == host.read_text().replace("# host\n", "")
    assert resolv_conf(pod({"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet"}), host=host) == first
    assert resolv_conf(pod({"dnsPolicy": "Default"}), host=host).startswith("nameserver 192.0.2.53\n")
    custom = resolv_conf(pod({"dnsPolicy": "None", "dnsConfig": {
        "nameservers": ["192.0.2.1"], "searches": ["a.example"], "options": [{"name": "ndots", "value": "2"},
                                                                              {"name": "rotate"}]}}), host=host)
    assert custom == "nameserver 192.0.2.1\nsearch a.example\noptions ndots:2 rotate\n"
    merged = resolv_conf(pod({"dnsConfig": {"options": [{"name": "ndots", "value": "1"}]}}), host=host)
    assert merged.endswith("options ndots:1\n")
