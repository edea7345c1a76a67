"""The cluster zone's answers, as the DNS spec and CoreDNS's kubernetes plugin give them:
queries go in as bytes and answers come out as bytes (DNSServer.handle), read with dnspython."""
from __future__ import annotations

from typing import Any

import dns.flags
import dns.message
import dns.name
import dns.rcode
import pytest

from kubeplane.dns.records import NameError_, parse_request
from kubeplane.dns.server import DNSServer
from zone_fixtures import endpoint_slice, namespace, service, zone_with

HEADLESS_ENDPOINTS = [
    {"addresses": ["10.244.0.5"], "hostname": "db-0", "conditions": {"ready": True}},
    {"addresses": ["10.244.0.6"], "conditions": {"ready": True}},
    {"addresses": ["10.244.0.7"], "hostname": "db-2", "conditions": {"ready": False}},
]


def ask(server: DNSServer, name: str, rdtype: str, **kw: Any) -> dns.message.Message:
    out = server.handle(dns.message.make_query(name, rdtype, **kw).to_wire(), False)
    assert isinstance(out, bytes)
    return dns.message.from_wire(out)


def answers(m: dns.message.Message) -> list[str]:
    return sorted(rd.to_text() for rrset in m.answer for rd in rrset)


@pytest.fixture
def server() -> DNSServer:
    return DNSServer(zone_with(
        service("web"),
        service("multi", cluster_ip="10.96.0.30", ports=[{"name": "http", "port": 80, "protocol": "TCP"},
                                                          {"name": "dns", "port": 53, "protocol": "UDP"}]),
        service("db", cluster_ip="None"), endpoint_slice("db", HEADLESS_ENDPOINTS),
        service("empty", cluster_ip="None"),
        service("ext", type_="ExternalName", external_name="web.default.svc.cluster.local"),
        service("outside", type_="ExternalName", external_name="example.com."),
        namespace("other")))


@pytest.mark.parametrize("labels,want", [
    ([], {}),
    (["svc"], {"pod_or_svc": "svc"}),
    (["default", "svc"], {"pod_or_svc": "svc", "namespace": "default"}),
    (["web", "default", "svc"], {"pod_or_svc": "svc", "namespace": "default", "service": "web"}),
    (["web-0", "web", "default", "svc"], {"pod_or_svc": "svc", "namespace": "default", "service": "web",
                                          "endpoint": "web-0"}),
    (["_http", "_tcp", "web", "default", "svc"], {"pod_or_svc": "svc", "namespace": "default", "service": "web",
                                                  "port": "http", "protocol": "tcp"}),
])
def test_parse_request(labels: list[str], want: dict[str, str]) -> None:
    r = parse_request(labels)
    assert {k: v for k, v in vars(r).items() if v} == want


@pytest.mark.parametrize("labels", [["x"], ["a", "b", "c", "d", "web", "default", "svc"], ["web", "default", "nope"]])
def test_parse_request_invalid(labels: list[str]) -> None:
    with pytest.raises(NameError_):
        parse_request(labels)


def test_cluster_ip_service_a_record_ttl_5_authoritative(server: DNSServer) -> None:
    m = ask(server, "web.default.svc.cluster.local.", "A")
    assert m.rcode() == dns.rcode.NOERROR and m.flags & dns.flags.AA
    assert answers(m) == ["10.96.0.20"] and m.answer[0].ttl == 5


def test_names_are_case_insensitive_and_echo_the_question(server: DNSServer) -> None:
    m = ask(server, "Web.DEFAULT.svc.Cluster.Local.", "A")
    assert answers(m) == ["10.96.0.20"]
    assert m.answer[0].name.to_text() == "Web.DEFAULT.svc.Cluster.Local."


def test_nodata_for_a_missing_type_has_the_soa(server: DNSServer) -> None:
    m = ask(server, "web.default.svc.cluster.local.", "AAAA")
    assert m.rcode() == dns.rcode.NOERROR and not m.answer
    soa = m.authority[0]
    assert soa.rdtype == dns.rdatatype.SOA and soa.name.to_text() == "cluster.local."
    assert soa[0].mname.to_text() == "ns.dns.cluster.local." and soa[0].rname.to_text() == "hostmaster.cluster.local."
    assert (soa[0].refresh, soa[0].retry, soa[0].expire, soa[0].minimum) == (7200, 1800, 86400, 5)


@pytest.mark.parametrize("name", ["nope.default.svc.cluster.local.", "web.nons.svc.cluster.local.",
                                  "empty.default.svc.cluster.local.", "x.y.z.web.default.svc.cluster.local.",
                                  "web.default.nope.cluster.local.", "foo.default.pod.cluster.local."])
def test_nxdomain_has_the_soa(server: DNSServer, name: str) -> None:
    m = ask(server, name, "A")
    assert m.rcode() == dns.rcode.NXDOMAIN and not m.answer
    assert m.authority[0].rdtype == dns.rdatatype.SOA


@pytest.mark.parametrize("name", ["cluster.local.", "svc.cluster.local.", "default.svc.cluster.local.",
                                  "other.svc.cluster.local.", "default.pod.cluster.local."])
def test_intermediate_names_are_nodata(server: DNSServer, name: str) -> None:
    m = ask(server, name, "A")
    assert m.rcode() == dns.rcode.NOERROR and not m.answer and m.authority


def test_headless_service_answers_its_ready_endpoints(server: DNSServer) -> None:
    assert answers(ask(server, "db.default.svc.cluster.local.", "A")) == ["10.244.0.5", "10.244.0.6"]


def test_endpoint_hostname_and_dashed_ip_records(server: DNSServer) -> None:
    assert answers(ask(server, "db-0.db.default.svc.cluster.local.", "A")) == ["10.244.0.5"]
    assert answers(ask(server, "10-244-0-6.db.default.svc.cluster.local.", "A")) == ["10.244.0.6"]
    assert ask(server, "db-2.db.default.svc.cluster.local.", "A").rcode() == dns.rcode.NXDOMAIN   # not ready


def test_published_not_ready_addresses_come_from_the_slice_ready_condition() -> None:
    # the EndpointSlice controller marks endpoints ready when publishNotReadyAddresses is set
    z = zone_with(service("db", cluster_ip="None"),
                  endpoint_slice("db", [{"addresses": ["10.244.0.7"], "hostname": "db-2", "conditions": {"ready": True,
                                                                                                          "serving": False}}]))
    assert answers(ask(DNSServer(z), "db-2.db.default.svc.cluster.local.", "A")) == ["10.244.0.7"]


def test_an_endpoint_without_a_ready_condition_counts_as_ready() -> None:
    """As CoreDNS's (and the kube-proxy's): an unset ready condition is ready."""
    z = zone_with(service("db", cluster_ip="None"),
                  endpoint_slice("db", [{"addresses": ["10.244.0.4"]}, {"addresses": ["10.244.0.5"], "conditions": {}},
                                        {"addresses": ["10.244.0.6"], "conditions": {"ready": False}}]))
    assert answers(ask(DNSServer(z), "db.default.svc.cluster.local.", "A")) == ["10.244.0.4", "10.244.0.5"]


def test_srv_of_a_cluster_ip_service(server: DNSServer) -> None:
    m = ask(server, "_http._tcp.web.default.svc.cluster.local.", "SRV")
    assert answers(m) == ["0 100 80 web.default.svc.cluster.local."]
    assert [str(r) for r in m.additional] == ["web.default.svc.cluster.local. 5 IN A 10.96.0.20"]
    all_ports = ask(server, "multi.default.svc.cluster.local.", "SRV")
    assert answers(all_ports) == ["0 50 53 multi.default.svc.cluster.local.", "0 50 80 multi.default.svc.cluster.local."]
    assert answers(ask(server, "_dns._udp.multi.default.svc.cluster.local.", "SRV")) == [
        "0 100 53 multi.default.svc.cluster.local."]
    assert ask(server, "_dns._tcp.multi.default.svc.cluster.local.", "SRV").rcode() == dns.rcode.NXDOMAIN


def test_srv_of_a_headless_service_names_each_endpoint(server: DNSServer) -> None:
    m = ask(server, "_http._tcp.db.default.svc.cluster.local.", "SRV")
    assert answers(m) == ["0 50 8080 10-244-0-6.db.default.svc.cluster.local.",
                          "0 50 8080 db-0.db.default.svc.cluster.local."]
    assert sorted(str(r) for r in m.additional) == ["10-244-0-6.db.default.svc.cluster.local. 5 IN A 10.244.0.6",
                                                    "db-0.db.default.svc.cluster.local. 5 IN A 10.244.0.5"]


def test_external_name_is_a_cname(server: DNSServer) -> None:
    m = ask(server, "outside.default.svc.cluster.local.", "CNAME")
    assert answers(m) == ["example.com."]
    inside = ask(server, "ext.default.svc.cluster.local.", "A")     # a target in the zone is followed
    assert [r.rdtype for r in inside.answer] == [dns.rdatatype.CNAME, dns.rdatatype.A]
    assert answers(inside) == ["10.96.0.20", "web.default.svc.cluster.local."]
    srv = ask(server, "ext.default.svc.cluster.local.", "SRV")       # SRV of an ExternalName: NODATA
    assert srv.rcode() == dns.rcode.NOERROR and not srv.answer


def test_pod_records(server: DNSServer) -> None:
    assert answers(ask(server, "10-1-2-3.default.pod.cluster.local.", "A")) == ["10.1.2.3"]
    assert ask(server, "10-1-2-3.nons.pod.cluster.local.", "A").rcode() == dns.rcode.NXDOMAIN


def test_zone_apex_and_schema_version(server: DNSServer) -> None:
    assert answers(ask(server, "dns-version.cluster.local.", "TXT")) == ['"1.1.0"']
    assert ask(server, "cluster.local.", "SOA").answer[0].rdtype == dns.rdatatype.SOA
    ns = ask(server, "cluster.local.", "NS")
    assert answers(ns) == ["ns.dns.cluster.local."] and [str(r) for r in ns.additional] == [
        "ns.dns.cluster.local. 5 IN A 10.96.0.10"]
    assert answers(ask(server, "ns.dns.cluster.local.", "A")) == ["10.96.0.10"]


def test_reverse_lookup_of_a_cluster_ip_and_an_endpoint(server: DNSServer) -> None:
    assert answers(ask(server, "20.0.96.10.in-addr.arpa.", "PTR")) == ["web.default.svc.cluster.local."]
    assert answers(ask(server, "5.0.244.10.in-addr.arpa.", "PTR")) == ["db-0.db.default.svc.cluster.local."]


def test_answers_follow_changes() -> None:
    z = zone_with(service("web"))
    s = DNSServer(z)
    assert answers(ask(s, "web.default.svc.cluster.local.", "A")) == ["10.96.0.20"]    # now cached
    z.set_service(service("web", cluster_ip="10.96.0.99"))
    assert answers(ask(s, "web.default.svc.cluster.local.", "A")) == ["10.96.0.99"]
    z.delete_service(service("web"))
    assert ask(s, "web.default.svc.cluster.local.", "A").rcode() == dns.rcode.NXDOMAIN


def test_until_synced_a_missing_name_is_servfail() -> None:
    z = zone_with()
    z.synced = lambda: False
    assert ask(DNSServer(z), "web.default.svc.cluster.local.", "A").rcode() == dns.rcode.SERVFAIL


def test_reverse_index_follows_changes(server: DNSServer) -> None:
    z = server.zone
    assert answers(ask(server, "20.0.96.10.in-addr.arpa.", "PTR")) == ["web.default.svc.cluster.local."]
    z.set_service(service("web", cluster_ip="10.96.0.21"))
    assert answers(ask(server, "21.0.96.10.in-addr.arpa.", "PTR")) == ["web.default.svc.cluster.local."]
    assert server.zone.reverse(dns.name.from_text("20.0.96.10.in-addr.arpa.")) is None   # not ours: forwarded


def test_cname_loops_and_unusable_external_names_end() -> None:
    z = zone_with(service("a", type_="ExternalName", external_name="b.default.svc.cluster.local"),
                  service("b", type_="ExternalName", external_name="a.default.svc.cluster.local"),
                  service("bad", type_="ExternalName", external_name="x" * 70 + ".example.com"))
    m = ask(DNSServer(z), "a.default.svc.cluster.local.", "A")
    assert m.rcode() == dns.rcode.NOERROR and 1 <= len(m.answer) <= 9
    assert ask(DNSServer(z), "bad.default.svc.cluster.local.", "CNAME").rcode() == dns.rcode.NXDOMAIN


def test_any_is_nodata_and_zone_transfers_are_refused(server: DNSServer) -> None:
    m = ask(server, "web.default.svc.cluster.local.", "ANY")
    assert m.rcode() == dns.rcode.NOERROR and not m.answer
    assert ask(server, "cluster.local.", "AXFR").rcode() == dns.rcode.REFUSED


@pytest.fixture
def upstream_zone() -> DNSServer:
    """CoreDNS's handler_test.go fixtures: hdls1 with four IPv4 endpoints (two named dup-name)
    and two IPv6 ones; svc-dual-stack with 10.0.0.3 and 10::3."""
    from kubeplane.api.types import core_v1
    from kubeplane.api.types.base import from_dict
    v4 = endpoint_slice("hdls1", [{"addresses": ["172.0.0.2"]}, {"addresses": ["172.0.0.3"]},
                                  {"addresses": ["172.0.0.4"], "hostname": "dup-name"},
                                  {"addresses": ["172.0.0.5"], "hostname": "dup-name"}],
                        ns="testns", ports=[{"name": "http", "port": 80, "protocol": "TCP"}])
    v6 = endpoint_slice("hdls1", [{"addresses": ["5678:abcd::1"]}, {"addresses": ["5678:abcd::2"]}],
                        ns="testns", name="hdls1-v6", ports=[{"name": "http", "port": 80, "protocol": "TCP"}])
    dual = from_dict({"metadata": {"name": "svc-dual-stack", "namespace": "testns"},
                      "spec": {"clusterIP": "10.0.0.3", "clusterIPs": ["10.0.0.3", "10::3"],
                               "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}}, core_v1.Service)
    return DNSServer(zone_with(namespace("testns"), service("hdls1", "testns", cluster_ip="None"), v4, v6, dual,
                               service("external", "testns", type_="ExternalName", external_name="ext.interwebs.test")))


def test_coredns_handler_cases(upstream_zone: DNSServer) -> None:
    """Upstream: dnsTestCases (coredns plugin/kubernetes/handler_test.go), the rows these fixtures hold."""
    s = upstream_zone
    small = ask(s, "_http._tcp.hdls1.testns.svc.cluster.local.", "SRV")     # 512 bytes: an address left out
    assert small.flags & dns.flags.TC and len(small.answer[0]) == 5
    srv = ask(s, "_http._tcp.hdls1.testns.svc.cluster.local.", "SRV", use_edns=0, payload=1232)
    assert not srv.flags & dns.flags.TC
    assert answers(srv) == [f"0 16 80 {t}.hdls1.testns.svc.cluster.local." for t in
                            ("172-0-0-2", "172-0-0-3", "5678-abcd--1", "5678-abcd--2", "dup-name")]
    assert sorted(rd.to_text() for r in srv.additional for rd in r) == [
        "172.0.0.2", "172.0.0.3", "172.0.0.4", "172.0.0.5", "5678:abcd::1", "5678:abcd::2"]
    assert answers(ask(s, "dup-name.hdls1.testns.svc.cluster.local.", "A")) == ["172.0.0.4", "172.0.0.5"]
    assert answers(ask(s, "hdls1.testns.svc.cluster.local.", "AAAA")) == ["5678:abcd::1", "5678:abcd::2"]
    assert answers(ask(s, "5678-abcd--2.hdls1.testns.svc.cluster.local.", "AAAA")) == ["5678:abcd::2"]
    assert answers(ask(s, "svc-dual-stack.testns.svc.cluster.local.", "A")) == ["10.0.0.3"]
    assert answers(ask(s, "svc-dual-stack.testns.svc.cluster.local.", "AAAA")) == ["10::3"]
    assert answers(ask(s, "svc-dual-stack.testns.svc.cluster.local.", "SRV")) == [
        "0 50 80 svc-dual-stack.testns.svc.cluster.local."]
    for name, rcode in (("svc.cluster.local.", dns.rcode.NOERROR), ("testns.svc.cluster.local.", dns.rcode.NOERROR),
                        ("foo.cluster.local.", dns.rcode.NXDOMAIN), ("foo.svc.cluster.local.", dns.rcode.NXDOMAIN)):
        m = ask(s, name, "NS")
        assert (m.rcode(), m.answer, m.authority[0].rdtype) == (rcode, [], dns.rdatatype.SOA), name
    soa = ask(s, "svc-dual-stack.testns.svc.cluster.local.", "SOA")
    assert soa.rcode() == dns.rcode.NOERROR and not soa.answer and soa.authority
    assert ask(s, "endpoint.external.testns.svc.cluster.local.", "CNAME").rcode() == dns.rcode.NXDOMAIN
    assert answers(ask(s, "external.testns.svc.cluster.local.", "CNAME")) == ["ext.interwebs.test."]


def test_informer_handlers_keep_the_maps() -> None:
    """What ClusterDNS.watch feeds: a slice moving to another Service, a relist's tombstone."""
    from kubeplane.client.tools.cache.store import DeletedFinalStateUnknown
    z = zone_with(service("a", cluster_ip="None"), service("b", cluster_ip="None"))
    s = DNSServer(z)
    old = endpoint_slice("a", [{"addresses": ["10.244.0.9"]}], name="sl")
    z.set_slice(old)
    assert answers(ask(s, "a.default.svc.cluster.local.", "A")) == ["10.244.0.9"]
    moved = endpoint_slice("b", [{"addresses": ["10.244.0.9"]}], name="sl")
    z.update_slice(old, moved)
    assert ask(s, "a.default.svc.cluster.local.", "A").rcode() == dns.rcode.NXDOMAIN
    assert answers(ask(s, "b.default.svc.cluster.local.", "A")) == ["10.244.0.9"]
    z.delete_slice(DeletedFinalStateUnknown("default/sl", moved))
    assert ask(s, "b.default.svc.cluster.local.", "A").rcode() == dns.rcode.NXDOMAIN
    z.delete_namespace(DeletedFinalStateUnknown("default", namespace("default")))
    assert ask(s, "default.svc.cluster.local.", "A").rcode() == dns.rcode.NXDOMAIN
