"""Cluster DNS with `kubeplane up` and the real kubectl: Services made with kubectl are answered
as the DNS spec says (A, SRV, CNAME, NXDOMAIN with the SOA), over UDP and TCP, by the server
`up` runs (--cluster-dns-port), and an answer follows a change of its Service."""
from __future__ import annotations

import contextlib
import socket
from typing import Iterator

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import pytest

from .cluster import Cluster, eventually, running


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PORT = free_port()
EXTRA = free_port()          # --cluster-dns-listen 127.0.0.2:EXTRA (all of 127/8 is loopback)


@pytest.fixture(scope="module")
def dns_cluster() -> Iterator[Cluster]:
    yield from running(nodes=1, extra_args=("--cluster-dns-port", str(PORT),
                                            "--cluster-dns-listen", f"127.0.0.2:{EXTRA}"))


def ask(name: str, rdtype: str = "A", tcp: bool = False) -> dns.message.Message:
    q = dns.message.make_query(name, rdtype)
    return (dns.query.tcp if tcp else dns.query.udp)(q, "127.0.0.1", port=PORT, timeout=5)


def answers(m: dns.message.Message, rdtype: int | None = None) -> list[str]:
    return sorted(rd.to_text() for rrset in m.answer for rd in rrset if rdtype is None or rrset.rdtype == rdtype)


def test_kube_dns_service_and_the_kubernetes_service(dns_cluster: Cluster) -> None:
    svc = eventually(lambda: dns_cluster.kubectl("get", "svc", "kube-dns", "-n", "kube-system", check=False).returncode == 0
                     and dns_cluster.get_json("svc", "kube-dns", "-n", "kube-system"), "the kube-dns Service")
    assert svc["spec"]["clusterIP"] == "10.96.0.10" and svc["metadata"]["labels"]["k8s-app"] == "kube-dns"
    assert [(p["port"], p["protocol"]) for p in svc["spec"]["ports"]] == [(53, "UDP"), (53, "TCP"), (9153, "TCP")]
    m = eventually(lambda: (r := ask("kubernetes.default.svc.cluster.local.")).answer and r, "the kubernetes Service")
    assert answers(m) == ["10.96.0.1"] and m.flags & dns.flags.AA and m.answer[0].ttl == 5
    srv = ask("_https._tcp.kubernetes.default.svc.cluster.local.", "SRV", tcp=True)
    assert answers(srv) == ["0 100 443 kubernetes.default.svc.cluster.local."]
    extra = dns.query.udp(dns.message.make_query("kube-dns.kube-system.svc.cluster.local.", "A"), "127.0.0.2",
                          port=EXTRA, timeout=5)
    assert answers(extra) == ["10.96.0.10"]
    assert f"Serving cluster DNS on 127.0.0.1:{PORT}, 127.0.0.2:{EXTRA}" in dns_cluster.log_path.read_text()


def test_services_with_and_without_selector(dns_cluster: Cluster) -> None:
    c = dns_cluster
    c.kubectl("create", "service", "clusterip", "web", "--tcp=80:8080")
    c.apply_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "manual", "namespace": "default"},
                  "spec": {"ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}]}})
    web_ip = c.get_json("svc", "web")["spec"]["clusterIP"]
    manual_ip = c.get_json("svc", "manual")["spec"]["clusterIP"]
    eventually(lambda: answers(ask("web.default.svc.cluster.local.")) == [web_ip], "web's A record")
    eventually(lambda: answers(ask("manual.default.svc.cluster.local.", tcp=True)) == [manual_ip], "manual's A record")
    assert answers(ask("_80-8080._tcp.web.default.svc.cluster.local.", "SRV")) == [
        "0 100 80 web.default.svc.cluster.local."]
    assert answers(ask("_pg._tcp.manual.default.svc.cluster.local.", "SRV")) == [
        "0 100 5432 manual.default.svc.cluster.local."]
    missing = ask("nope.default.svc.cluster.local.")
    assert missing.rcode() == dns.rcode.NXDOMAIN and missing.authority[0].rdtype == dns.rdatatype.SOA
    nodata = ask("web.default.svc.cluster.local.", "AAAA")
    assert nodata.rcode() == dns.rcode.NOERROR and not nodata.answer and nodata.authority

    c.kubectl("delete", "svc", "web")                      # the answer follows the Service
    eventually(lambda: ask("web.default.svc.cluster.local.").rcode() == dns.rcode.NXDOMAIN, "web's NXDOMAIN")


def test_headless_service_and_a_statefulset_like_pod(dns_cluster: Cluster) -> None:
    c = dns_cluster
    c.apply_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "default"},
                  "spec": {"clusterIP": "None", "selector": {"app": "db"},
                           "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}]}})
    c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-0", "namespace": "default",
                                                                  "labels": {"app": "db"}},
                  "spec": {"hostname": "db-0", "subdomain": "db",
                           "containers": [{"name": "pg", "image": "postgres", "ports": [{"containerPort": 5432}]}]}})
    pod_ip = eventually(lambda: c.get_json("pod", "db-0").get("status", {}).get("podIP"), "db-0's IP")
    eventually(lambda: answers(ask("db.default.svc.cluster.local.")) == [pod_ip], "db's endpoint A record")
    assert answers(ask("db-0.db.default.svc.cluster.local.")) == [pod_ip]
    srv = ask("_pg._tcp.db.default.svc.cluster.local.", "SRV")
    assert answers(srv) == ["0 100 5432 db-0.db.default.svc.cluster.local."]
    assert [str(r) for r in srv.additional] == [f"db-0.db.default.svc.cluster.local. 5 IN A {pod_ip}"]
    dashed = pod_ip.replace(".", "-")
    assert answers(ask(f"{dashed}.default.pod.cluster.local.")) == [pod_ip]


def test_external_name_is_a_cname_that_follows_changes(dns_cluster: Cluster) -> None:
    c = dns_cluster
    c.kubectl("create", "service", "externalname", "ext", "--external-name", "db.example.com")
    eventually(lambda: answers(ask("ext.default.svc.cluster.local.", "CNAME")) == ["db.example.com."], "ext's CNAME")
    c.kubectl("patch", "svc", "ext", "-p", '{"spec":{"externalName":"kubernetes.default.svc.cluster.local"}}')
    m = eventually(lambda: (r := ask("ext.default.svc.cluster.local.")).answer and
                   answers(r, dns.rdatatype.CNAME) == ["kubernetes.default.svc.cluster.local."] and r, "the new CNAME")
    assert answers(m, dns.rdatatype.A) == ["10.96.0.1"]         # a target inside the zone is followed


def test_process_pods_get_the_cluster_resolv_conf() -> None:
    """The in-process kubelet's --cluster-dns/--cluster-domain reach the process runtime, which
    writes each pod's resolv.conf into the pod's directory (a pod's mount namespace binds it)."""
    with contextlib.contextmanager(running)(nodes=1, extra_args=("--runtime", "process")) as c:
        c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sleeper", "namespace": "default"},
                      "spec": {"dnsConfig": {"options": [{"name": "edns0"}]},
                               "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "60"]}]}})
        uid = c.get_json("pod", "sleeper")["metadata"]["uid"]
        path = c.data_dir / "kubelet" / "pods" / uid / "resolv.conf"
        text = eventually(lambda: path.exists() and path.read_text(), "the pod's resolv.conf")
        lines = text.splitlines()
        assert lines[0].startswith("search default.svc.cluster.local svc.cluster.local cluster.local")
        assert lines[1:] == ["nameserver 10.96.0.10", "options ndots:5 edns0"]
        c.kubectl("delete", "pod", "sleeper", "--grace-period=0", "--force")


def test_not_ready_pods_are_published_only_when_the_service_says_so(dns_cluster: Cluster) -> None:
    """A pod held unready by a readiness gate: the headless Service's name has no address
    (NXDOMAIN), until a second Service publishes not-ready addresses (the EndpointSlice
    controller marks them ready; the DNS server reads the slices)."""
    c = dns_cluster
    c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gated", "namespace": "default",
                                                                  "labels": {"app": "gated"}},
                  "spec": {"readinessGates": [{"conditionType": "example.com/never"}],
                           "containers": [{"name": "c", "image": "nginx"}]}})
    for name, publish in (("gated", False), ("gated-all", True)):
        c.apply_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
                      "spec": {"clusterIP": "None", "selector": {"app": "gated"}, "publishNotReadyAddresses": publish,
                               "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})
    pod_ip = eventually(lambda: c.get_json("pod", "gated").get("status", {}).get("podIP"), "gated's IP")
    eventually(lambda: answers(ask("gated-all.default.svc.cluster.local.")) == [pod_ip], "the published address")
    assert ask("gated.default.svc.cluster.local.").rcode() == dns.rcode.NXDOMAIN
