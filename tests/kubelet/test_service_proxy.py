"""The process runtime's kube-proxy: which Service ports it serves and where it sends each
connection (pure: no sockets); the forwarding itself is in tests/e2e/test_pod_network.py."""
from __future__ import annotations

from typing import Any

from kubeplane.api.types import core_v1, discovery_v1, from_dict
from kubeplane.kubelet.network.proxy import DEFAULT_AFFINITY_TIMEOUT, PortRule, desired_rules


def service(name: str, spec: dict[str, Any]) -> core_v1.Service:
    return from_dict({"metadata": {"name": name, "namespace": "default"}, "spec": spec}, core_v1.Service)


def slice_(svc: str, ports: list[dict[str, Any]], endpoints: list[dict[str, Any]],
           address_type: str = "IPv4") -> discovery_v1.EndpointSlice:
    return from_dict({"metadata": {"name": f"{svc}-abc", "namespace": "default",
                                   "labels": {"kubernetes.io/service-name": svc}},
                      "addressType": address_type, "ports": ports, "endpoints": endpoints},
                     discovery_v1.EndpointSlice)


def ep(ip: str, ready: bool | None = True) -> dict[str, Any]:
    return {"addresses": [ip], **({"conditions": {"ready": ready}} if ready is not None else {})}


def test_ready_endpoints_per_named_port_cluster_ips_and_node_ports() -> None:
    svcs = [service("web", {"type": "NodePort", "clusterIP": "10.96.0.20", "clusterIPs": ["10.96.0.20"],
                            "ports": [{"name": "http", "port": 80, "nodePort": 30080},
                                      {"name": "dns", "port": 53, "protocol": "UDP"},
                                      {"name": "sctp", "port": 9, "protocol": "SCTP"}]}),
            service("empty", {"clusterIP": "10.96.0.21", "ports": [{"port": 80}]}),
            service("headless", {"clusterIP": "None", "ports": [{"port": 80}]}),
            service("ext", {"type": "ExternalName", "externalName": "example.com"})]
    slices = [slice_("web", [{"name": "http", "port": 8080}, {"name": "dns", "port": 53, "protocol": "UDP"},
                             {"name": "sctp", "port": 9, "protocol": "SCTP"}],
                     [ep("10.244.0.3"), ep("10.244.0.2", ready=None), ep("10.244.0.4", ready=False)]),
              slice_("web", [{"name": "http", "port": 8080}], [ep("fd00::3")], address_type="IPv6"),
              slice_("empty", [{"port": 8080}], [ep("10.244.0.9", ready=False)]),
              slice_("headless", [{"port": 8080}], [ep("10.244.0.7")])]
    rules = desired_rules(svcs, slices, "127.0.0.1")
    assert set(rules) == {("10.96.0.20", 80, "TCP"), ("127.0.0.1", 30080, "TCP"), ("10.96.0.20", 53, "UDP")}
    assert rules[("10.96.0.20", 53, "UDP")].endpoints == [("10.244.0.2", 53), ("10.244.0.3", 53)]
    rule = rules[("10.96.0.20", 80, "TCP")]
    assert rule.endpoints == [("10.244.0.2", 8080), ("10.244.0.3", 8080)]  # unset ready counts as ready
    assert (rule.service, rule.affinity_timeout) == ("default/web:http", 0.0)


def test_round_robin_and_client_ip_affinity_with_its_timeout() -> None:
    rr = PortRule("s", [("a", 1), ("b", 1)])
    assert [rr.pick("c1", 0)[0] for _ in range(4)] == [("a", 1), ("b", 1), ("a", 1), ("b", 1)]
    assert rr.pick("c1", 0) == [("a", 1), ("b", 1)]                 # the rest to try after the first
    sticky = PortRule("s", [("a", 1), ("b", 1)], affinity_timeout=10)
    assert [sticky.pick("c1", t)[0] for t in (0, 5, 14)] == [("a", 1)] * 3
    assert sticky.pick("c2", 14)[0] == ("b", 1)                     # another client, the next endpoint
    assert sticky.pick("c1", 30)[0] == ("a", 1)                     # expired (16 s idle): round robin again
    sticky.endpoints = [("b", 1)]
    assert sticky.pick("c1", 31) == [("b", 1)]                      # its endpoint went away
    assert PortRule("s", []).pick("c", 0) == []


def test_client_ip_affinity_defaults_to_upstreams_timeout() -> None:
    svcs = [service("s", {"clusterIP": "10.96.0.5", "sessionAffinity": "ClientIP", "ports": [{"port": 80}]})]
    rules = desired_rules(svcs, [slice_("s", [{"port": 80}], [ep("10.244.0.2")])], "127.0.0.1")
    assert rules[("10.96.0.5", 80, "TCP")].affinity_timeout == DEFAULT_AFFINITY_TIMEOUT == 10800


async def test_udp_clients_each_get_their_endpoint_and_the_replies() -> None:
    import asyncio
    import socket

    from kubeplane.kubelet.network.proxy import UDPProxy

    class Echo(asyncio.DatagramProtocol):
        def __init__(self, tag: bytes) -> None:
            self.tag = tag

        def connection_made(self, transport: Any) -> None:
            self.transport = transport

        def datagram_received(self, data: bytes, addr: Any) -> None:
            self.transport.sendto(self.tag + data, addr)
    loop = asyncio.get_running_loop()
    backs = [(await loop.create_datagram_endpoint(lambda t=t: Echo(t), local_addr=("127.0.0.1", 0)))[0]
             for t in (b"a:", b"b:")]
    eps = [("127.0.0.1", b.get_extra_info("sockname")[1]) for b in backs]
    front, proxy = await loop.create_datagram_endpoint(lambda: UDPProxy(PortRule("s", eps)), local_addr=("127.0.0.1", 0))
    clients = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
    try:
        got = []
        for c in clients:
            c.settimeout(2)
            for msg in (b"one", b"two"):                   # a client keeps its endpoint
                c.sendto(msg, front.get_extra_info("sockname"))
                got.append((await loop.run_in_executor(None, c.recv, 100)))
        assert got == [b"a:one", b"a:two", b"b:one", b"b:two"]
        assert len(proxy.clients) == 2
    finally:
        for c in clients:
            c.close()
        front.close()
        for b in backs:
            b.close()
    from process_testutil import eventually
    await eventually(lambda: proxy.clients == {}, what="closing the port to close its clients' sockets")


def test_service_links_as_the_kubelet_sets_them() -> None:
    from kubeplane.kubelet.network.envvars import service_env

    def pod(ns: str, links: bool | None = None) -> core_v1.Pod:
        spec: dict[str, Any] = {"containers": []}
        if links is not None:
            spec["enableServiceLinks"] = links
        return from_dict({"metadata": {"name": "p", "namespace": ns}, "spec": spec}, core_v1.Pod)

    def in_ns(name: str, ns: str, spec: dict[str, Any]) -> core_v1.Service:
        return from_dict({"metadata": {"name": name, "namespace": ns}, "spec": spec}, core_v1.Service)
    svcs = [in_ns("kubernetes", "default", {"clusterIP": "10.96.0.1",
                                             "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}),
            in_ns("web-api", "team", {"clusterIP": "10.96.0.20",
                                      "ports": [{"name": "http", "port": 80}, {"name": "dns", "port": 53,
                                                                               "protocol": "UDP"}]}),
            in_ns("headless", "team", {"clusterIP": "None", "ports": [{"port": 80}]}),
            in_ns("elsewhere", "other", {"clusterIP": "10.96.0.30", "ports": [{"port": 80}]})]
    env = service_env(pod("team"), svcs)
    assert {k: v for k, v in env.items() if k.startswith("WEB_API")} == {
        "WEB_API_SERVICE_HOST": "10.96.0.20", "WEB_API_SERVICE_PORT": "80", "WEB_API_SERVICE_PORT_HTTP": "80",
        "WEB_API_SERVICE_PORT_DNS": "53", "WEB_API_PORT": "tcp://10.96.0.20:80",
        "WEB_API_PORT_80_TCP": "tcp://10.96.0.20:80", "WEB_API_PORT_80_TCP_PROTO": "tcp",
        "WEB_API_PORT_80_TCP_PORT": "80", "WEB_API_PORT_80_TCP_ADDR": "10.96.0.20",
        "WEB_API_PORT_53_UDP": "udp://10.96.0.20:53", "WEB_API_PORT_53_UDP_PROTO": "udp",
        "WEB_API_PORT_53_UDP_PORT": "53", "WEB_API_PORT_53_UDP_ADDR": "10.96.0.20"}
    assert (env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"]) == ("10.96.0.1", "443")
    assert not any(k.startswith(("HEADLESS", "ELSEWHERE")) for k in env)
    no_links = service_env(pod("team", links=False), svcs)
    assert set(no_links) == {k for k in env if k.startswith("KUBERNETES")}     # the API server's always
