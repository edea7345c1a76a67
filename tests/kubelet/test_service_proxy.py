"""The process runtime's kube-proxy: which Service ports it serves and where it sends each
connection (pure: no sockets); the forwarding itself is in tests/e2e/test_pod_network.py."""
from __future__ import annotations

from typing import Any

from kubeplane.api.types import core_v1, discovery_v1, from_dict
from kubeplane.kubelet.network.proxy import DEFAULT_AFFINITY_TIMEOUT, PortRule, desired_rules, service_vips


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


def ep_on(ip: str, node: str, ready: bool | None = True) -> dict[str, Any]:
    return {**ep(ip, ready), "nodeName": node}


def test_node_ports_listen_on_every_local_address_by_default_and_external_destinations() -> None:
    """--nodeport-addresses unset: the wildcard (every address of the host); externalIPs and the
    load balancer's VIPs are captured (made local) like ClusterIPs, an ipMode Proxy one is not."""
    svc = service("lb", {"type": "LoadBalancer", "clusterIP": "10.96.0.30", "externalIPs": ["192.0.2.50", "fd00::1"],
                         "externalTrafficPolicy": "Local", "loadBalancerSourceRanges": ["192.0.2.0/24"],
                         "ports": [{"port": 80, "nodePort": 30080}]})
    svc.status = from_dict({"loadBalancer": {"ingress": [{"ip": "203.0.113.7"},
                                                         {"ip": "203.0.113.8", "ipMode": "Proxy"},
                                                         {"hostname": "lb.example.com"}]}}, core_v1.ServiceStatus)
    slices = [slice_("lb", [{"port": 8080}], [ep_on("10.244.0.2", "n0"), ep_on("10.244.1.2", "n1"),
                                             ep_on("10.244.0.3", "n0", ready=False)])]
    rules = desired_rules([svc], slices, local_nodes={"n0"})
    assert set(rules) == {("10.96.0.30", 80, "TCP"), ("192.0.2.50", 80, "TCP"), ("203.0.113.7", 80, "TCP"),
                          ("0.0.0.0", 30080, "TCP")}
    node_port, cluster_ip, lb = rules[("0.0.0.0", 30080, "TCP")], rules[("10.96.0.30", 80, "TCP")], \
        rules[("203.0.113.7", 80, "TCP")]
    assert (node_port.external, node_port.policy_local) == (True, True)
    assert (cluster_ip.external, cluster_ip.policy_local) == (False, False)
    assert service_vips([svc, service("none", {"clusterIP": "10.96.0.32", "ports": [{"port": 80}]})]) == {
        "10.96.0.30", "10.96.0.32", "192.0.2.50", "203.0.113.7"}                # with or without endpoints
    assert node_port.local == {"n0": [("10.244.0.2", 8080)]}           # ready endpoints on this kubelet's nodes
    assert [str(n) for n in lb.source_ranges] == ["192.0.2.0/24"] and not node_port.source_ranges
    # With --nodeport-addresses CIDRs, one listener per matching host address.
    rules = desired_rules([svc], slices, ["192.0.2.2", "127.0.0.1"])
    assert {k for k in rules if k[1] == 30080} == {("192.0.2.2", 30080, "TCP"), ("127.0.0.1", 30080, "TCP")}


def test_a_service_without_ready_endpoints_has_no_listener_so_connections_are_refused() -> None:
    svc = service("web", {"type": "NodePort", "clusterIP": "10.96.0.31", "ports": [{"port": 80, "nodePort": 30081}]})
    assert desired_rules([svc], [slice_("web", [{"port": 8080}], [ep("10.244.0.2", ready=False)])]) == {}


class FakeNetwork:
    active = True

    def node_cidrs(self) -> dict[str, Any]:
        import ipaddress
        return {"n0": ipaddress.ip_network("10.244.0.0/24"), "n1": ipaddress.ip_network("10.244.1.0/24")}


def proxy_for_policies() -> Any:
    from kubeplane.kubelet.network.proxy import ServiceProxy
    p = ServiceProxy.__new__(ServiceProxy)            # endpoints_for only needs the network
    p.network = FakeNetwork()                         # type: ignore[assignment]
    return p


def test_traffic_policies_choose_the_endpoints_by_where_the_client_is() -> None:
    """Local policies: a pod of node n0 gets n0's endpoints (ClusterIP) or every endpoint (an
    external destination: upstream's pod short-circuit); the host itself gets every endpoint of
    an external destination; an outside client gets the endpoints on this kubelet's nodes, or
    none (upstream DROPs it)."""
    from kubeplane.kubelet.network.proxy import PortRule
    proxy = proxy_for_policies()
    everywhere = [("10.244.0.2", 80), ("10.244.1.2", 80), ("10.244.2.2", 80)]
    local = {"n0": [("10.244.0.2", 80)], "n1": [("10.244.1.2", 80)]}
    cluster = PortRule("s", everywhere, external=True, local=local)
    assert proxy.endpoints_for(cluster, "198.51.100.9") == everywhere
    etp = PortRule("s", everywhere, external=True, policy_local=True, local=local)
    assert proxy.endpoints_for(etp, "198.51.100.9") == [("10.244.0.2", 80), ("10.244.1.2", 80)]   # outside
    assert proxy.endpoints_for(etp, "10.244.0.5") == everywhere          # a pod: short-circuited to Cluster
    assert proxy.endpoints_for(etp, "127.0.0.1") == everywhere           # the host itself: likewise
    assert proxy.endpoints_for(PortRule("s", everywhere, external=True, policy_local=True), "198.51.100.9") == []
    itp = PortRule("s", everywhere, policy_local=True, local=local)
    assert proxy.endpoints_for(itp, "10.244.1.7") == [("10.244.1.2", 80)]      # the pod's own node
    assert proxy.endpoints_for(PortRule("s", everywhere, policy_local=True, local={"n1": local["n1"]}),
                               "10.244.0.7") == []                               # none on its node: dropped
    import ipaddress
    ranged = PortRule("s", everywhere, external=True, source_ranges=[ipaddress.ip_network("198.51.100.0/24")])
    assert proxy.endpoints_for(ranged, "198.51.100.9") == everywhere
    assert proxy.endpoints_for(ranged, "203.0.113.1") == []                     # outside loadBalancerSourceRanges
    assert proxy.endpoints_for(etp, "not-an-ip") == []


def test_health_check_node_port_answers_as_upstreams() -> None:
    from kubeplane.kubelet.network.proxy import HealthCheck, health_check_ports
    svc = service("lb", {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "healthCheckNodePort": 32000,
                         "ports": [{"port": 80, "nodePort": 30080}]})
    cluster = service("c", {"type": "LoadBalancer", "healthCheckNodePort": 32001, "ports": [{"port": 80}]})
    slices = [slice_("lb", [{"port": 8080}], [ep_on("10.244.0.2", "n0"), ep_on("10.244.0.3", "n0"),
                                             ep_on("10.244.1.2", "n1")])]
    assert health_check_ports([svc, cluster], slices, {"n0"}) == {32000: ("default", "lb", 2)}
    hc = HealthCheck("default", "lb")
    hc.endpoints = 2
    head, body = hc.response().split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"Content-Type: application/json" in head and b"X-Content-Type-Options: nosniff" in head
    assert b"X-Load-Balancing-Endpoint-Weight: 2" in head
    assert body == (b'{\n\t"service": {\n\t\t"namespace": "default",\n\t\t"name": "lb"\n\t},\n'
                    b'\t"localEndpoints": 2,\n\t"serviceProxyHealthy": true\n}')
    hc.endpoints = 0
    assert hc.response().startswith(b"HTTP/1.1 503 Service Unavailable\r\n")


def test_node_port_addresses_flag_is_validated_as_upstream() -> None:
    import pytest

    from kubeplane.kubelet.network.proxy import parse_node_port_addresses
    assert parse_node_port_addresses("") == ()
    assert parse_node_port_addresses("primary") == ("primary",)
    assert parse_node_port_addresses("192.0.2.0/24, 127.0.0.0/8") == ("192.0.2.0/24", "127.0.0.0/8")
    with pytest.raises(ValueError, match=r'nodePortAddresses\[0\]: Invalid value: "192.0.2.1": must be a valid CIDR'):
        parse_node_port_addresses("192.0.2.1")
    with pytest.raises(ValueError, match="can't use both 'primary' and CIDRs"):
        parse_node_port_addresses("10.0.0.0/8,primary")


async def test_a_node_port_forwards_while_it_has_ready_endpoints_and_is_refused_without() -> None:
    """Real listeners (--nodeport-addresses primary: the nodes' address, 127.0.0.1 here): the
    NodePort reaches the endpoint, the healthCheckNodePort answers; once the endpoint is not
    ready, a connection is refused (upstream's REJECT) and the health check says 503."""
    import asyncio
    import socket
    import urllib.error
    import urllib.request
    from types import SimpleNamespace

    from kubeplane.kubelet.network.proxy import ServiceProxy

    def free_port() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello from the endpoint")
        await writer.drain()
        writer.close()
    backend = await asyncio.start_server(answer, "127.0.0.1", 0)
    backend_port = backend.sockets[0].getsockname()[1]
    node_port, hc_port = free_port(), free_port()
    state: dict[str, list[Any]] = {"svc": [service("lb", {
        "type": "LoadBalancer", "clusterIP": "None", "externalTrafficPolicy": "Local", "healthCheckNodePort": hc_port,
        "ports": [{"port": 80, "nodePort": node_port}]})], "slices": []}

    def informer(kind: str) -> Any:
        return SimpleNamespace(informer=lambda: SimpleNamespace(add_event_handler=lambda h: None),
                               lister=lambda: SimpleNamespace(list=lambda: state[kind]))
    factory = SimpleNamespace(core_v1=lambda: SimpleNamespace(services=lambda: informer("svc")),
                              discovery_v1=lambda: SimpleNamespace(endpointslices=lambda: informer("slices")))
    proxy = ServiceProxy(factory, FakeNetwork(), node_address="127.0.0.1",     # type: ignore[arg-type]
                         node_port_addresses=["primary"])

    async def fetch(port: int) -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        data = await reader.read()
        writer.close()
        return data

    def health() -> int:
        try:
            return int(urllib.request.urlopen(f"http://127.0.0.1:{hc_port}/", timeout=5).status)
        except urllib.error.HTTPError as err:
            return err.code
    try:
        state["slices"] = [slice_("lb", [{"port": backend_port}], [ep_on("127.0.0.1", "n0")])]
        await proxy.sync()
        assert await fetch(node_port) == b"hello from the endpoint"
        assert await asyncio.to_thread(health) == 200
        state["slices"] = [slice_("lb", [{"port": backend_port}], [ep_on("127.0.0.1", "n0", ready=False)])]
        await proxy.sync()
        try:
            await fetch(node_port)
            raise AssertionError("the NodePort still answers without a ready endpoint")
        except ConnectionRefusedError:
            pass
        assert await asyncio.to_thread(health) == 503
    finally:
        await proxy.close()
        backend.close()


async def test_a_node_port_another_process_holds_is_taken_once_it_is_free() -> None:
    """Two kubelet processes on one machine (`up` and `kubeplane kubelet`): the second finds the
    NodePort in use, goes on, and listens there at a later sync once the port is free."""
    import asyncio
    import socket
    from types import SimpleNamespace

    from kubeplane.kubelet.network.proxy import ServiceProxy
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    node_port = squatter.getsockname()[1]
    state: dict[str, list[Any]] = {
        "svc": [service("np", {"type": "NodePort", "clusterIP": "None", "ports": [{"port": 80, "nodePort": node_port}]})],
        "slices": [slice_("np", [{"port": 9}], [ep_on("127.0.0.1", "n0")])]}

    def informer(kind: str) -> Any:
        return SimpleNamespace(informer=lambda: SimpleNamespace(add_event_handler=lambda h: None),
                               lister=lambda: SimpleNamespace(list=lambda: state[kind]))
    factory = SimpleNamespace(core_v1=lambda: SimpleNamespace(services=lambda: informer("svc")),
                              discovery_v1=lambda: SimpleNamespace(endpointslices=lambda: informer("slices")))
    proxy = ServiceProxy(factory, FakeNetwork(), node_port_addresses=["primary"])   # type: ignore[arg-type]
    key = ("127.0.0.1", node_port, "TCP")
    try:
        await proxy.sync()
        assert key not in proxy._servers and key in proxy._unbound
        squatter.close()
        await proxy.sync()
        assert key in proxy._servers and not proxy._unbound
        _, writer = await asyncio.open_connection("127.0.0.1", node_port)     # ours now
        writer.close()
    finally:
        squatter.close()
        await proxy.close()
